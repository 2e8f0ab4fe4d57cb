import Foundation
import Histogram
import PreciseTimer
import PreciseTimerReference

// precise-bench [--quick] [--json]: every measurement, side by side in one run, one table.
// A plain executable rather than ordo-one/benchmark: lateness is a distribution of wake-ups of
// a live timer, not the duration of a repeated closure, and the contestants must be interleaved
// round by round on this noisy 2-core VM; ordo-one's harness measures the latter kind of thing.

let arguments = CommandLine.arguments
if let index = arguments.firstIndex(of: "--memory-probe"), index + 2 < arguments.count {
    // Child process: measure one contestant's memory in a clean heap, print bytes per timer.
    print(try Scale.memoryPerTimer(contestant: arguments[index + 1], count: Int(arguments[index + 2])!))
    exit(0)
}
let quick = arguments.contains("--quick")
/// `--only lateness,concurrent,cost,memory,storm` runs a subset.
let only: Set<String>? = arguments.firstIndex(of: "--only").flatMap { index in
    index + 1 < arguments.count ? Set(arguments[index + 1].split(separator: ",").map(String.init)) : nil
}
func selected(_ section: String) -> Bool { only?.contains(section) ?? true }
let json = arguments.contains("--json")
func log(_ message: String) {
    FileHandle.standardError.write(Data("[precise-bench] \(message)\n".utf8))
}

var report = Report()
var results: [String: Double] = [:]
let interval: Int64 = 1_000_000

// MARK: 1 ms periodic lateness, interleaved rounds
if selected("lateness") {
    let ticks = quick ? 1_000 : 5_000
    let rounds = quick ? 2 : 5
    var runs: [Contestant: LatenessRun] = [:]
    var skipped: [Contestant: String] = [:]
    for round in 1...rounds {
        log("lateness round \(round)/\(rounds)")
        for contestant in Contestant.allCases where skipped[contestant] == nil {
            switch contestant.run(interval: interval, ticks: ticks / rounds) {
            case .success(let run): runs[contestant, default: LatenessRun()].append(run)
            case .failure(let skip): skipped[contestant] = skip.reason
            }
        }
    }
    // The floor is the better of the two kernel loops: the strictest reference.
    let floorP50 = min(
        Double(runs[.floorNanosleep]!.histogram.valueAtPercentile(50)),
        Double(runs[.floorTimerfd]!.histogram.valueAtPercentile(50)))
    let dispatchP99 = Double(runs[.dispatch]!.histogram.valueAtPercentile(99))
    var lateness = Report.Section(
        title: "Lateness of a 1 ms periodic timer, \(ticks) ticks each, \(rounds) interleaved rounds (µs)",
        header: ["contestant", "p50", "p90", "p99", "p99.9", "max", "drift", "missed", "p50 / floor"]
    )
    for contestant in Contestant.allCases {
        guard let run = runs[contestant] else {
            lateness.rows.append(
                .init(cells: [contestant.rawValue, "skipped: \(skipped[contestant] ?? "?")"], verdict: nil))
            continue
        }
        let histogram = run.histogram
        let p50 = Double(histogram.valueAtPercentile(50))
        let p99 = Double(histogram.valueAtPercentile(99))
        var verdict: Bool?
        switch contestant {
        case .precise:
            verdict = p50 <= 1.05 * floorP50 && p99 <= dispatchP99 && run.drift <= interval
            report.target(
                "PreciseTimer p50 ≤ 1.05× floor p50 (\(Format.ratio(p50 / floorP50)))", p50 <= 1.05 * floorP50)
            report.target(
                "PreciseTimer p99 ≤ Dispatch p99 (\(Format.micro(p99)) vs \(Format.micro(dispatchP99)) µs)",
                p99 <= dispatchP99)
            report.target(
                "PreciseTimer drift ≤ one period (\(Format.micro(Double(run.drift))) µs)", run.drift <= interval)
        case .preciseSpin:
            verdict = p50 <= 5_000
            report.target("spin finish p50 ≤ 5 µs (\(Format.micro(p50)) µs)", p50 <= 5_000)
        default: break
        }
        results["lateness.\(contestant).p50"] = p50
        results["lateness.\(contestant).p99"] = p99
        lateness.rows.append(
            .init(
                cells: [
                    contestant.rawValue, Format.micro(p50), Format.micro(Double(histogram.valueAtPercentile(90))),
                    Format.micro(p99),
                    Format.micro(Double(histogram.valueAtPercentile(99.9))), Format.micro(Double(histogram.max)),
                    Format.micro(Double(run.drift)), "\(run.missed)", Format.ratio(p50 / floorP50),
                ], verdict: verdict))
    }
    report.sections.append(lateness)
}

// MARK: Many concurrent periodic timers
if selected("concurrent") {
    var concurrent = Report.Section(
        title: "Many concurrent 1 ms periodic timers, phases spread over the period (µs)",
        header: ["contestant", "timers", "calls", "p50", "p99", "max", "missed"]
    )
    for count in [100, 10_000] {
        for (name, make) in [
            ("PreciseTimer", { try PreciseTimer() as any TimerService }),
            ("DispatchReferenceTimer", { DispatchReferenceTimer() as any TimerService }),
        ] {
            log("\(count) concurrent timers on \(name)")
            let timers = try make()
            let run = try Scale.concurrentPeriodic(timers, count: count, seconds: quick ? 1 : 2)
            timers.shutdown()
            let histogram = run.histogram
            concurrent.rows.append(
                .init(
                    cells: [
                        name, "\(count)", "\(run.samples.count)", Format.micro(Double(histogram.valueAtPercentile(50))),
                        Format.micro(Double(histogram.valueAtPercentile(99))), Format.micro(Double(histogram.max)),
                        "\(run.missed)",
                    ], verdict: nil))
        }
    }
    report.sections.append(concurrent)
}

// MARK: Schedule + cancel at scale
if selected("cost") {
    let pending = quick ? 100_000 : 1_000_000
    let pairs = quick ? 50_000 : 200_000
    var cost = Report.Section(
        title: "schedule + cancel per timer with \(pending) pending (ns; target ≤ 1000 wall and CPU)",
        header: ["contestant", "order", "threads", "wall / pair", "CPU / pair"]
    )
    for (name, make) in [
        ("PreciseTimer", { try PreciseTimer() as any TimerService }),
        ("DispatchReferenceTimer", { DispatchReferenceTimer() as any TimerService }),
    ] {
        for order in [Scale.Order.fifo, .random] {
            for threads in [1, 2] {
                log("schedule+cancel \(name) \(order.rawValue) \(threads) thread(s)")
                let timers = try make()
                let result = try Scale.scheduleCancel(
                    timers, pending: pending, pairs: pairs, threads: threads, order: order)
                timers.shutdown()
                let met = result.wallPerPair <= 1_000 && result.cpuPerPair <= 1_000
                cost.rows.append(
                    .init(
                        cells: [
                            name, order.rawValue, "\(threads)", Format.nano(result.wallPerPair),
                            Format.nano(result.cpuPerPair),
                        ],
                        verdict: name == "PreciseTimer" ? met : nil))
                if name == "PreciseTimer" {
                    report.target(
                        "schedule+cancel ≤ 1 µs wall and CPU, \(order.rawValue), \(threads) thread(s) "
                            + "(\(Format.nano(result.wallPerPair)) / \(Format.nano(result.cpuPerPair)) ns)", met)
                }
                results["cost.\(name).\(order.rawValue).\(threads).cpu"] = result.cpuPerPair
            }
        }
    }
    for nioPending in [20_000, 100_000] {
        log("schedule+cancel NIO at \(nioPending) pending")
        let result = try Scale.nioScheduleCancel(pending: nioPending, pairs: quick ? 1_000 : 5_000)
        cost.rows.append(
            .init(
                cells: [
                    "NIO scheduleTask (\(nioPending) pending)", "FIFO", "1",
                    Format.nano(result.wallPerPair), Format.nano(result.cpuPerPair),
                ], verdict: nil,
                note: "cancel is a linear heap scan"))
    }
    report.sections.append(cost)
}

// MARK: Memory per pending timer (fresh process each)
if selected("memory") {
    let memoryCount = quick ? 200_000 : 1_000_000
    var memory = Report.Section(
        title: "Memory per pending timer, RSS growth / \(memoryCount) (bytes)",
        header: ["contestant", "bytes / timer"])
    for (name, key) in [
        ("PreciseTimer", "precise"), ("DispatchReferenceTimer", "dispatch"), ("NIO scheduleTask", "nio"),
    ] {
        log("memory \(name)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--memory-probe", key, "\(memoryCount)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let bytes = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
        results["memory.\(key)"] = bytes
        memory.rows.append(.init(cells: [name, Format.nano(bytes)], verdict: key == "precise" ? bytes <= 256 : nil))
        if key == "precise" { report.target("≤ 256 bytes per pending timer (\(Format.nano(bytes)) B)", bytes <= 256) }
    }
    report.sections.append(memory)
}

// MARK: Fire storm and idle CPU
if selected("storm") {
    var storm = Report.Section(title: "Fire storm and idle cost", header: ["contestant", "measure", "value"])
    for (name, make) in [
        ("PreciseTimer", { try PreciseTimer() as any TimerService }),
        ("DispatchReferenceTimer", { DispatchReferenceTimer() as any TimerService }),
    ] {
        log("fire storm \(name)")
        let timers = try make()
        let last = try Scale.fireStorm(timers, count: 100_000)
        storm.rows.append(
            .init(
                cells: [
                    name, "100 000 one-shots at one instant: deadline → last handler",
                    "\(Format.micro(Double(last))) µs",
                ],
                verdict: name == "PreciseTimer" ? last <= 50_000_000 : nil))
        if name == "PreciseTimer" {
            report.target("fire storm of 100 000 within 50 ms (\(Format.micro(Double(last))) µs)", last <= 50_000_000)
        }
        let idleSeconds = quick ? 3 : 10
        log("idle CPU \(name)")
        let cpu = try Scale.idleCPU(timers, seconds: idleSeconds)
        timers.shutdown()
        storm.rows.append(
            .init(
                cells: [
                    name, "process CPU, one 1 s timer idling \(idleSeconds) s",
                    "\(Format.micro(Double(cpu))) µs",
                ], verdict: nil))
    }
    report.sections.append(storm)
}

// MARK: Output

if json {
    let data = try JSONSerialization.data(withJSONObject: results, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
} else {
    var uts = utsname()
    uname(&uts)
    let machine = withUnsafeBytes(of: uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    print(
        "# PreciseTimer benchmarks (\(quick ? "quick" : "full") run, \(ProcessInfo.processInfo.activeProcessorCount) cores, Linux \(machine))"
    )
    print(report.render())
}
