import Foundation
import PreciseTimerCalendar
import PreciseTimerCore
import Testing

@Suite("TimerUnit: systemd.timer(5) files")
struct TimerUnitTests {
    /// What each Debian 12 `.timer` file must read as: its [Timer] section, normalized (the
    /// calendar forms are `systemd-analyze calendar`'s, the spans `systemd-analyze timespan`'s).
    /// The files are copied under `Fixtures/timers` (their packages in its README.md).
    static let debianTimers: [String: String] = [
        "apt-daily.timer": "[Timer]\nOnCalendar=*-*-* 06,18:00:00\nRandomizedDelaySec=12h\nPersistent=yes",
        "apt-daily-upgrade.timer": "[Timer]\nOnCalendar=*-*-* 06:00:00\nRandomizedDelaySec=1h\nPersistent=yes",
        "dpkg-db-backup.timer": "[Timer]\nOnCalendar=*-*-* 00:00:00",
        "e2scrub_all.timer": "[Timer]\nOnCalendar=Sun *-*-* 03:10:00\nRandomizedDelaySec=1min\nPersistent=yes",
        "fstrim.timer":
            "[Timer]\nOnCalendar=Mon *-*-* 00:00:00\nAccuracySec=1h\nRandomizedDelaySec=1h 40min\nPersistent=yes",
        "man-db.timer": "[Timer]\nOnCalendar=*-*-* 00:00:00\nRandomizedDelaySec=12h\nPersistent=yes",
        "pg_basebackup@.timer": "[Timer]\nOnCalendar=Mon *-*-* 00:00:00\nRandomizedDelaySec=1h\nFixedRandomDelay=yes",
        "pg_compresswal@.timer": "[Timer]\nOnCalendar=*-*-* 00:00:00\nRandomizedDelaySec=1h\nFixedRandomDelay=yes",
        "pg_dump@.timer": "[Timer]\nOnCalendar=Mon *-*-* 00:00:00\nRandomizedDelaySec=1h\nFixedRandomDelay=yes",
        "systemd-tmpfiles-clean.timer": "[Timer]\nOnBootSec=15min\nOnUnitActiveSec=1d",
        "anacron.timer": "[Timer]\nOnCalendar=*-*-* 07..23:30:00\nRandomizedDelaySec=5min\nPersistent=yes",
        "certbot.timer": "[Timer]\nOnCalendar=*-*-* 00,12:00:00\nRandomizedDelaySec=12h\nPersistent=yes",
        "exim4-base.timer": "[Timer]\nOnCalendar=*-*-* 00:00:00\nAccuracySec=12h\nPersistent=yes",
        "fwupd-refresh.timer": "[Timer]\nOnCalendar=*-*-* *:00:00\nRandomizedDelaySec=1h\nPersistent=yes",
        "logrotate.timer": "[Timer]\nOnCalendar=*-*-* 00:00:00\nAccuracySec=1h\nPersistent=yes",
        "mdadm-last-resort@.timer": "[Timer]\nOnActiveSec=30s",
        "mdcheck_continue.timer": "[Timer]\nOnCalendar=*-*-* 01:05:00",
        "mdcheck_start.timer": "[Timer]\nOnCalendar=Sun *-*-01..07 01:00:00",
        "mdmonitor-oneshot.timer": "[Timer]\nOnCalendar=*-*-* 02:00:00",
        "phpsessionclean.timer": "[Timer]\nOnCalendar=*-*-* *:09,39:00\nPersistent=yes",
        "plocate-updatedb.timer":
            "[Timer]\nOnCalendar=*-*-* 00:00:00\nAccuracySec=20min\nRandomizedDelaySec=12h\nPersistent=yes",
        "sysstat-collect.timer": "[Timer]\nOnCalendar=*-*-* *:00/10:00",
        "sysstat-summary.timer": "[Timer]\nOnCalendar=*-*-* 00:07:00",
    ]

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/timers")

    static func parse(_ url: URL) throws -> TimerUnit {
        try TimerUnit(String(contentsOf: url, encoding: .utf8))
    }

    @Test("23 .timer files of 13 Debian 12 packages, copied under Fixtures/timers: each reads as expected")
    func debianFixtures() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path)
            .filter { $0.hasSuffix(".timer") }.sorted()
        #expect(names == Self.debianTimers.keys.sorted())
        for name in names {
            let unit = try Self.parse(Self.fixtures.appendingPathComponent(name))
            #expect(unit.description == Self.debianTimers[name], "\(name)")
        }
    }

    @Test("every .timer file under /lib/systemd/system on this machine parses (none there: nothing to check)")
    func installedTimers() throws {
        let directory = "/lib/systemd/system"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".timer") }.sorted()
        for name in names {
            let url = URL(fileURLWithPath: directory).appendingPathComponent(name)
            // A symlink to /dev/null masks a unit; it is not a timer file.
            guard let text = try? String(contentsOf: url, encoding: .utf8), !text.isEmpty else { continue }
            let unit: TimerUnit
            do {
                unit = try TimerUnit(text)
            } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            if let expected = Self.debianTimers[name] { #expect(unit.description == expected, "\(name)") }
        }
    }

    @Test("apt-daily.timer, field by field")
    func aptDaily() throws {
        let unit = try Self.parse(Self.fixtures.appendingPathComponent("apt-daily.timer"))
        let twiceDaily = try CalendarSchedule("*-*-* 6,18:00")
        #expect(unit.onCalendar == [twiceDaily])
        #expect(unit.onCalendar.map(\.description) == ["*-*-* 06,18:00:00"])
        #expect(unit.randomizedDelay == .seconds(12 * 3_600))
        #expect(unit.persistent)
        #expect(!unit.fixedRandomDelay && !unit.wakeSystem)
        #expect(unit.accuracy == .seconds(60))
        #expect(unit.onActive.isEmpty && unit.onBoot.isEmpty && unit.onStartup.isEmpty)
        #expect(unit.onUnitActive.isEmpty && unit.onUnitInactive.isEmpty && unit.ignored.isEmpty)
    }

    @Test("systemd-tmpfiles-clean.timer: monotonic triggers; fstrim.timer: AccuracySec= and a plain number")
    func monotonicAndAccuracy() throws {
        let clean = try Self.parse(Self.fixtures.appendingPathComponent("systemd-tmpfiles-clean.timer"))
        #expect(clean.onBoot == [.seconds(900)])
        #expect(clean.onUnitActive == [.seconds(86_400)])
        #expect(clean.onCalendar.isEmpty && !clean.persistent)
        let fstrim = try Self.parse(Self.fixtures.appendingPathComponent("fstrim.timer"))
        #expect(fstrim.accuracy == .seconds(3_600))
        #expect(fstrim.randomizedDelay == .seconds(6_000))
    }

    @Test("every directive, defaults, and the ignored ones listed in order")
    func everyDirective() throws {
        let unit = try TimerUnit(
            """
            [Timer]
            OnCalendar=Mon..Fri 09:00
            OnCalendar=daily
            OnActiveSec=30
            OnBootSec=1h 30min
            OnStartupSec=2.5s
            OnUnitActiveSec=1w
            OnUnitInactiveSec=5m 30s
            AccuracySec=1us
            RandomizedDelaySec=10min
            FixedRandomDelay=true
            Persistent=on
            WakeSystem=1
            Unit=backup.service
            RemainAfterElapse=no
            OnClockChange=yes
            OnTimezoneChange=false
            """)
        #expect(unit.onCalendar.map(\.description) == ["Mon..Fri *-*-* 09:00:00", "*-*-* 00:00:00"])
        #expect(unit.onActive == [.seconds(30)])
        #expect(unit.onBoot == [.seconds(5_400)])
        #expect(unit.onStartup == [.milliseconds(2_500)])
        #expect(unit.onUnitActive == [.seconds(604_800)])
        #expect(unit.onUnitInactive == [.seconds(330)])
        #expect(unit.accuracy == .microseconds(1))
        #expect(unit.randomizedDelay == .seconds(600))
        #expect(unit.fixedRandomDelay && unit.persistent && unit.wakeSystem)
        #expect(
            unit.ignored == [
                "Unit=backup.service", "RemainAfterElapse=no", "OnClockChange=yes", "OnTimezoneChange=false",
            ])
        #expect(
            unit.description == """
                [Timer]
                OnCalendar=Mon..Fri *-*-* 09:00:00
                OnCalendar=*-*-* 00:00:00
                OnActiveSec=30s
                OnBootSec=1h 30min
                OnStartupSec=2.500000s
                OnUnitActiveSec=1w
                OnUnitInactiveSec=5min 30s
                AccuracySec=1us
                RandomizedDelaySec=10min
                FixedRandomDelay=yes
                Persistent=yes
                WakeSystem=yes
                Unit=backup.service
                RemainAfterElapse=no
                OnClockChange=yes
                OnTimezoneChange=false
                """)
        // The normalized section reads back as the same unit (calendar schedules by their normalized form).
        let again = try TimerUnit(unit.description)
        #expect(again.description == unit.description)
        #expect(again.onActive == unit.onActive && again.onStartup == unit.onStartup && again.ignored == unit.ignored)
    }

    @Test("unit-file syntax: comments, continuations, whitespace around =, CRLF, a byte order mark, other sections")
    func syntax() throws {
        let unit = try TimerUnit(
            "\u{FEFF}[Unit]\r\nDescription=x # not a comment\r\n; a comment\r\n\r\n"
                + "  [Timer]  \n"
                + "# OnCalendar=hourly\n"
                + "   ; OnCalendar=hourly\n"
                + "OnCalendar = Mon \\\n"
                + "# a comment inside the continuation is skipped\n"
                + "   *-*-* 1:00 Europe/Berlin\n"
                + "\tPersistent\t=\tyes\t\n"
                + "RandomizedDelaySec=1h\\\n"
                + "30min\n"
                + "[X-Custom]\nAnything goes here\n"
                + "[Install]\nWantedBy=timers.target\n"
                + "[Timer]\rWakeSystem=YES")
        #expect(unit.onCalendar.map(\.description) == ["Mon *-*-* 01:00:00 Europe/Berlin"])
        #expect(unit.persistent && unit.wakeSystem)
        #expect(unit.randomizedDelay == .seconds(5_400))
        // A bare [Timer] body.
        #expect(try TimerUnit("OnCalendar=hourly").onCalendar.map(\.description) == ["*-*-* *:00:00"])
    }

    @Test("booleans: every spelling systemd's parse_boolean takes, in any case")
    func booleans() throws {
        for (word, value) in [
            ("yes", true), ("y", true), ("true", true), ("t", true), ("on", true), ("1", true), ("YES", true),
            ("True", true), ("oN", true), ("no", false), ("n", false), ("false", false), ("f", false),
            ("off", false), ("0", false), ("NO", false), ("Off", false),
        ] {
            #expect(try TimerUnit("OnCalendar=daily\nPersistent=\(word)").persistent == value, "\(word)")
        }
        for word in ["", "maybe", "2", "yess", "enabled", "none"] {
            #expect(throws: PreciseTimerError.self, "\(word)") {
                try TimerUnit("OnCalendar=daily\nPersistent=\(word)")
            }
        }
    }

    @Test("an empty trigger assignment removes every trigger before it, calendar and monotonic alike")
    func emptyAssignmentResets() throws {
        let unit = try TimerUnit(
            """
            [Timer]
            OnCalendar=daily
            OnBootSec=5min
            OnCalendar=
            OnCalendar=weekly
            OnActiveSec=1h
            """)
        #expect(unit.onCalendar.map(\.description) == ["Mon *-*-* 00:00:00"])
        #expect(unit.onBoot.isEmpty)
        #expect(unit.onActive == [.seconds(3_600)])
        let monotonic = try TimerUnit("OnCalendar=daily\nOnUnitActiveSec=\nOnBootSec=1")
        #expect(monotonic.onCalendar.isEmpty && monotonic.onBoot == [.seconds(1)])
    }

    /// The error a unit throws: its line and reason, checked against what is expected.
    static func refusal(_ text: String) -> PreciseTimerError? {
        do {
            _ = try TimerUnit(text)
            return nil
        } catch {
            return error
        }
    }

    @Test(
        "refused with the line and what is wrong",
        arguments: [
            ("[Timer]\nOnCalendar=daily\nOnCalender=daily", "OnCalender=daily", "line 3: OnCalender=: an unknown key"),
            ("[Timer]\nOnCalendar=dayly", "OnCalendar=dayly", "line 2: OnCalendar=: 'dayly' is not a calendar"),
            ("[Timer]\nOnBootSec=15 minutes later", "OnBootSec=15 minutes later", "line 2: OnBootSec=: '15 minutes"),
            ("[Timer]\nOnCalendar=daily\nAccuracySec=", "AccuracySec=", "line 3: AccuracySec=: '' is not a time span"),
            ("[Timer]\nOnCalendar=daily\nRandomizedDelaySec=infinity", "RandomizedDelaySec=infinity", "line 3:"),
            ("[Timer]\nOnActiveSec=infinity", "OnActiveSec=infinity", "line 2: OnActiveSec=: 'infinity'"),
            ("[Timer]\nOnCalendar=daily\nPersistent=maybe", "Persistent=maybe", "line 3: Persistent=: 'maybe' is not"),
            ("[Timer]\nOnCalendar=daily\nPersistent=", "Persistent=", "line 3: Persistent=: an empty value"),
            ("[Timer]\nOnCalendar=daily\nOnClockChange=sometimes", "OnClockChange=sometimes", "line 3:"),
            ("[Timer]\nOnCalendar=daily\nUnit=a.service\nUnit=b.service", "Unit=b.service", "line 4: Unit=: a second"),
            ("[Timer]\nOnCalendar=daily\nUnit=", "Unit=", "line 3: Unit=: '' is not a unit name"),
            ("[Timer]\nOnCalendar=daily\n[Timers]\n", "[Timers]", "line 3: an unknown section [Timers]"),
            ("[Timer]\nOnCalendar=daily\n[Service]\nExecStart=/bin/true", "[Service]", "line 3: an unknown section"),
            ("[Timer\nOnCalendar=daily", "[Timer", "line 1: an invalid section header"),
            ("OnCalendar=daily\n[Timer]\nPersistent=yes", "OnCalendar=daily", "line 1: an assignment before any"),
            ("[Timer]\nOnCalendar daily", "OnCalendar daily", "line 2: no '=' in the line"),
            ("[Timer]\n=daily", "=daily", "line 2: no key before '='"),
            ("[Unit]\nDescription\n[Timer]\nOnCalendar=daily", "Description", "line 2: no '=' in the line"),
            ("[Timer]\noncalendar=daily", "oncalendar=daily", "line 2: oncalendar=: an unknown key"),
            ("[Timer]\nOnCalendar=%i daily", "OnCalendar=%i daily", "line 2: OnCalendar=: the specifier %i"),
            ("[Timer]\nOnCalendar=Mon \\\n# c\n  *-*-* 25:00", "OnCalendar=Mon    *-*-* 25:00", "lines 2-4: OnCal"),
            ("[Unit]\nDescription=no trigger\n[Timer]\nPersistent=yes", nil, "no trigger"),
            ("[Timer]\nOnCalendar=daily\nOnCalendar=", nil, "no trigger"),
            ("", nil, "no trigger"),
        ] as [(String, String?, String)])
    func refused(text: String, value: String?, detail: String) {
        guard let error = Self.refusal(text) else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
        #expect(error.code == .invalidSchedule)
        #expect(error.value == value)
        #expect(error.detail?.hasPrefix(detail) == true, "\(error)")
    }

    @Test(
        "accepted as systemd accepts them: OnClockChange= alone, %% in a value, X- sections, a continuation at the end")
    func accepted() throws {
        // systemd counts OnClockChange= as a trigger; it never elapses in process, and says so in `ignored`.
        let clock = try TimerUnit("[Timer]\nOnClockChange=yes")
        #expect(clock.ignored == ["OnClockChange=yes"])
        #expect(clock.onCalendar.isEmpty)
        let open = try TimerUnit("[Timer]\nOnBootSec=5 \\")
        #expect(open.onBoot == [.seconds(5)])
        let extensionSection = try TimerUnit("[X-Mine]\nno equals sign\n[Timer]\nOnActiveSec=1")
        #expect(extensionSection.onActive == [.seconds(1)])
        // Duplicates stay, in order: systemd keeps each line's trigger.
        #expect(try TimerUnit("OnCalendar=daily\nOnCalendar=daily").onCalendar.count == 2)
        // An even number of trailing backslashes does not continue the line.
        #expect(throws: PreciseTimerError.self) { try TimerUnit("OnCalendar=daily\\\\\nPersistent=yes") }
    }

    @Test("an unknown key names the directive it most likely meant")
    func typoHint() {
        #expect(Self.refusal("OnCalender=daily")?.detail?.hasSuffix("did you mean OnCalendar=?") == true)
        #expect(Self.refusal("oncalendar=daily")?.detail?.hasSuffix("did you mean OnCalendar=?") == true)
        #expect(
            Self.refusal("OnCalendar=daily\nRandomisedDelaySec=5m")?.detail?.hasSuffix(
                "did you mean RandomizedDelaySec=?")
                == true)
        #expect(Self.refusal("OnCalendar=daily\nDescription=x")?.detail?.contains("did you mean") == false)
    }

    @Test("a unit is a value: Hashable, and its fields may be changed")
    func value() throws {
        var unit = try TimerUnit("OnCalendar=daily")
        let copy = unit
        #expect(unit == copy && unit.hashValue == copy.hashValue)
        unit.persistent = true
        unit.accuracy = .seconds(1)
        #expect(unit != copy)
        #expect(unit.description == "[Timer]\nOnCalendar=*-*-* 00:00:00\nAccuracySec=1s\nPersistent=yes")
    }
}
