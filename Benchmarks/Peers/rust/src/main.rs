//! The tokio peers of precise-bench's `peers` section: the same work, with the same seeded draws,
//! as the PreciseTimer, libevent and Go rows (see Benchmarks/README.md, "Peers").
//!
//!     precise-peer-tokio tokio|delayqueue cost <fifo|random> <pending> <pairs> <touches> <seed>
//!     precise-peer-tokio tokio|delayqueue storm <count>
//!     precise-peer-tokio tokio lateness <ticks> <interval-ns>
//!
//! Prints one JSON line: `{"figures":{...},"samples":[...]}` (nanoseconds, bytes).
//!
//! - `tokio`: one spawned task per timer (`sleep_until` then the handler) on the default
//!   multi-thread runtime, cancelled with `JoinHandle::abort`.
//! - `delayqueue`: tokio-util's `DelayQueue` (a hierarchical timing wheel over a slab) on a
//!   current-thread runtime: `insert`, `remove`, `reset`, `poll_expired`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::time::delay_queue::Key;
use tokio_util::time::DelayQueue;

// MARK: Clocks and counters (the same reads as every other row)

fn now_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

fn process_cpu_ns() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (usage.ru_utime.tv_sec as i64 + usage.ru_stime.tv_sec as i64) * 1_000_000_000
        + (usage.ru_utime.tv_usec as i64 + usage.ru_stime.tv_usec as i64) * 1_000
}

fn resident_bytes() -> i64 {
    let text = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64
}

// MARK: Seeded draws (identical in Swift, C and Go)

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Every timer's delay (an hour plus 0–60 s, in whole milliseconds), the victims of the pairs and
/// the timers the touch pushes later; `check` folds them all, so the caller can see that every
/// language drew the same.
struct Draws {
    delays_ms: Vec<u64>,
    victims: Vec<usize>,
    touches: Vec<usize>,
    check: u64,
}

fn draws(order: &str, pending: usize, pairs: usize, touches: usize, seed: u64) -> Draws {
    let mut generator = SplitMix64(seed);
    let delays_ms: Vec<u64> = (0..pending + pairs)
        .map(|_| 3_600_000 + generator.next() % 60_000)
        .collect();
    let mut permutation: Vec<usize> = (0..pending).collect();
    for i in (1..pending).rev() {
        let j = (generator.next() % (i as u64 + 1)) as usize;
        permutation.swap(i, j);
    }
    let victims: Vec<usize> = if order == "fifo" {
        (0..pairs).collect()
    } else {
        permutation[..pairs].to_vec()
    };
    let touches = permutation[pairs..pairs + touches].to_vec();
    let mut check: u64 = 0;
    for value in delays_ms
        .iter()
        .map(|&d| d)
        .chain(victims.iter().map(|&v| v as u64))
        .chain(touches.iter().map(|&t| t as u64))
    {
        check = check.wrapping_mul(31).wrapping_add(value);
    }
    Draws {
        delays_ms,
        victims,
        touches,
        check: check % 1_000_000_007,
    }
}

// MARK: Output

fn print_result(figures: &[(&str, f64)], samples: &[i64]) {
    let figures: Vec<String> = figures
        .iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| format!("\"{}\":{}", k, v))
        .collect();
    let samples: Vec<String> = samples.iter().map(|s| s.to_string()).collect();
    println!(
        "{{\"figures\":{{{}}},\"samples\":[{}]}}",
        figures.join(","),
        samples.join(",")
    );
}

fn fail(message: &str) -> ! {
    eprintln!("precise-peer-tokio: {}", message);
    std::process::exit(1)
}

fn arg<T: std::str::FromStr>(args: &[String], index: usize) -> T {
    args.get(index)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| fail(&format!("bad or missing argument {}", index)))
}

// MARK: tokio: a task per timer

static POLLED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static FIRED: AtomicUsize = AtomicUsize::new(0);
static FIRST: AtomicI64 = AtomicI64::new(0);
static LAST: AtomicI64 = AtomicI64::new(0);

/// Counts a timer task's future dropped (aborted, here).
struct DropCount;

impl Drop for DropCount {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A storm handler: the first and the last call's times.
fn storm_fire(count: usize) {
    let n = FIRED.fetch_add(1, Ordering::AcqRel) + 1;
    let now = now_ns();
    if n == 1 {
        FIRST.store(now, Ordering::Release);
    }
    if n == count {
        LAST.store(now, Ordering::Release);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()))
}

/// One timer as a tokio user writes it: a task that sleeps to the deadline, then runs the handler.
fn spawn_timer(handle: &tokio::runtime::Handle, delay: Duration) -> JoinHandle<()> {
    let when = Instant::now() + delay;
    handle.spawn(async move {
        let _count = DropCount;
        POLLED.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep_until(when).await;
        FIRED.fetch_add(1, Ordering::Relaxed);
    })
}

/// Waits (off the runtime) until `done` holds: the runtime has caught up.
fn settle(done: impl Fn() -> bool) {
    while !done() {
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn tokio_cost(draws: &Draws, pending: usize, pairs: usize) {
    let rt = runtime();
    let handle = rt.handle().clone();
    // Warm the runtime's threads before the baseline.
    rt.block_on(handle.spawn(async {}))
        .unwrap_or_else(|e| fail(&e.to_string()));
    // Only this thread, which spawns and aborts: the workers, started above, stay unpinned.
    pin_from_environment();
    let mut handles: Vec<Option<JoinHandle<()>>> = Vec::with_capacity(pending + pairs);
    handles.resize_with(pending + pairs, || None);

    let (rss0, cpu0, t0) = (resident_bytes(), process_cpu_ns(), now_ns());
    for i in 0..pending {
        handles[i] = Some(spawn_timer(
            &handle,
            Duration::from_millis(draws.delays_ms[i]),
        ));
    }
    // Wall: the caller's time per schedule; CPU: until the runtime has polled every new task
    // (registered its sleep), as every row counts the work a service pushes to its threads.
    let fill_wall = now_ns() - t0;
    settle(|| POLLED.load(Ordering::Relaxed) >= pending);
    let fill_cpu = process_cpu_ns() - cpu0;
    let bytes = (resident_bytes() - rss0) as f64 / pending as f64;

    let (cpu1, t1) = (process_cpu_ns(), now_ns());
    for k in 0..pairs {
        handles[pending + k] = Some(spawn_timer(
            &handle,
            Duration::from_millis(draws.delays_ms[pending + k]),
        ));
        match handles[draws.victims[k]].take() {
            Some(victim) => victim.abort(),
            None => fail("victim cancelled twice"),
        }
    }
    let wall = now_ns() - t1;
    settle(|| {
        POLLED.load(Ordering::Relaxed) >= pending + pairs
            && DROPPED.load(Ordering::Relaxed) >= pairs
    });
    let cpu = process_cpu_ns() - cpu1;
    if FIRED.load(Ordering::Relaxed) != 0 {
        fail("a timer fired during the measurement");
    }
    print_result(
        &[
            ("fill", fill_wall as f64 / pending as f64),
            ("fillCpu", fill_cpu as f64 / pending as f64),
            ("bytes", bytes),
            ("wall", wall as f64 / pairs as f64),
            ("cpu", cpu as f64 / pairs as f64),
            ("check", draws.check as f64),
        ],
        &[],
    );
    std::mem::forget(handles);
    std::process::exit(0);
}

fn tokio_storm(count: usize) {
    let rt = runtime();
    let handle = rt.handle().clone();
    rt.block_on(handle.spawn(async {}))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let (base_instant, base_ns) = (Instant::now(), now_ns());
    let deadline_ns = base_ns + 2_000_000_000;
    let deadline = base_instant + Duration::from_nanos((deadline_ns - base_ns) as u64);
    for _ in 0..count {
        handle.spawn(async move {
            tokio::time::sleep_until(deadline).await;
            storm_fire(count);
        });
    }
    let overrun = now_ns() - deadline_ns;
    settle(|| FIRED.load(Ordering::Acquire) >= count);
    print_result(
        &[
            (
                "first",
                (FIRST.load(Ordering::Acquire) - deadline_ns) as f64,
            ),
            ("last", (LAST.load(Ordering::Acquire) - deadline_ns) as f64),
            ("overrun", overrun as f64),
        ],
        &[],
    );
    std::process::exit(0);
}

/// One `tokio::time::interval_at` on the grid start + k·interval: `tick()` returns the deadline
/// of the tick it completes, so lateness is a fresh clock read minus that deadline.
fn tokio_lateness(ticks: usize, interval_ns: u64) {
    let rt = runtime();
    let period = Duration::from_nanos(interval_ns);
    let cpu0 = process_cpu_ns();
    let samples = rt
        .block_on(rt.spawn(async move {
            let mut samples = Vec::with_capacity(ticks);
            let mut interval = tokio::time::interval_at(Instant::now() + period, period);
            for _ in 0..ticks {
                let deadline = interval.tick().await;
                let now = Instant::now();
                let late = if now >= deadline {
                    (now - deadline).as_nanos() as i64
                } else {
                    -((deadline - now).as_nanos() as i64)
                };
                samples.push(late);
            }
            samples
        }))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let cpu = process_cpu_ns() - cpu0;
    print_result(&[("cpu", cpu as f64 / ticks as f64)], &samples);
    std::process::exit(0);
}

// MARK: DelayQueue

/// `std::future::poll_fn` spelled out: the next expired entry of the queue.
struct NextExpired<'a> {
    queue: &'a mut DelayQueue<u64>,
}

impl Future for NextExpired<'_> {
    type Output = Option<u64>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u64>> {
        self.queue
            .poll_expired(cx)
            .map(|expired| expired.map(|e| e.into_inner()))
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()))
}

fn delayqueue_cost(draws: &Draws, pending: usize, pairs: usize) {
    pin_from_environment();
    let rt = current_thread();
    rt.block_on(async {
        let mut queue: DelayQueue<u64> = DelayQueue::new();
        let mut keys: Vec<Option<Key>> = Vec::with_capacity(pending + pairs);
        keys.resize_with(pending + pairs, || None);

        let (rss0, cpu0, t0) = (resident_bytes(), process_cpu_ns(), now_ns());
        for i in 0..pending {
            keys[i] = Some(queue.insert(i as u64, Duration::from_millis(draws.delays_ms[i])));
        }
        let (fill_wall, fill_cpu) = (now_ns() - t0, process_cpu_ns() - cpu0);
        let bytes = (resident_bytes() - rss0) as f64 / pending as f64;

        let (cpu1, t1) = (process_cpu_ns(), now_ns());
        for k in 0..pairs {
            keys[pending + k] = Some(queue.insert(
                (pending + k) as u64,
                Duration::from_millis(draws.delays_ms[pending + k]),
            ));
            match keys[draws.victims[k]].take() {
                Some(victim) => {
                    queue.remove(&victim);
                }
                None => fail("victim cancelled twice"),
            }
        }
        let (wall, cpu) = (now_ns() - t1, process_cpu_ns() - cpu1);

        let mut figures = vec![
            ("fill", fill_wall as f64 / pending as f64),
            ("fillCpu", fill_cpu as f64 / pending as f64),
            ("bytes", bytes),
            ("wall", wall as f64 / pairs as f64),
            ("cpu", cpu as f64 / pairs as f64),
            ("check", draws.check as f64),
        ];
        if !draws.touches.is_empty() {
            let (cpu2, t2) = (process_cpu_ns(), now_ns());
            for &t in &draws.touches {
                match &keys[t] {
                    Some(key) => {
                        queue.reset(key, Duration::from_millis(draws.delays_ms[t] + 3_600_000))
                    }
                    None => fail("touched a cancelled timer"),
                }
            }
            let (wall, cpu) = (now_ns() - t2, process_cpu_ns() - cpu2);
            figures.push(("touchWall", wall as f64 / draws.touches.len() as f64));
            figures.push(("touchCpu", cpu as f64 / draws.touches.len() as f64));
        }
        if queue.len() != pending {
            fail("pending count changed");
        }
        print_result(&figures, &[]);
        std::process::exit(0);
    });
}

fn delayqueue_storm(count: usize) {
    let rt = current_thread();
    rt.block_on(async {
        let mut queue: DelayQueue<u64> = DelayQueue::new();
        let (base_instant, base_ns) = (Instant::now(), now_ns());
        let deadline_ns = base_ns + 2_000_000_000;
        let deadline = base_instant + Duration::from_nanos((deadline_ns - base_ns) as u64);
        for i in 0..count {
            queue.insert_at(i as u64, deadline);
        }
        let overrun = now_ns() - deadline_ns;
        for _ in 0..count {
            if (NextExpired { queue: &mut queue }).await.is_none() {
                fail("the queue ran dry");
            }
            storm_fire(count);
        }
        print_result(
            &[
                (
                    "first",
                    (FIRST.load(Ordering::Acquire) - deadline_ns) as f64,
                ),
                ("last", (LAST.load(Ordering::Acquire) - deadline_ns) as f64),
                ("overrun", overrun as f64),
            ],
            &[],
        );
        std::process::exit(0);
    });
}

/// Pins the calling thread, and only it, to the CPU in `PRECISE_BENCH_CPU`, as precise-bench
/// pins every column's measuring thread in a cost round.
fn pin_from_environment() {
    let value = match std::env::var("PRECISE_BENCH_CPU") {
        Ok(value) => value,
        Err(_) => return,
    };
    let cpu: usize = match value.parse() {
        Ok(cpu) if cpu < libc::CPU_SETSIZE as usize => cpu,
        _ => fail(&format!("PRECISE_BENCH_CPU={} is not a CPU number", value)),
    };
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        fail(&format!("cannot pin to CPU {}: {}", cpu, std::io::Error::last_os_error()));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let peer = args.get(1).map(String::as_str).unwrap_or("");
    let work = args.get(2).map(String::as_str).unwrap_or("");
    match (peer, work) {
        (_, "cost") => {
            let order: String = arg(&args, 3);
            let (pending, pairs, touches, seed): (usize, usize, usize, u64) =
                (arg(&args, 4), arg(&args, 5), arg(&args, 6), arg(&args, 7));
            if pairs + touches > pending || (order != "fifo" && order != "random") {
                fail("pairs + touches must not exceed pending; order is fifo or random");
            }
            let draws = draws(&order, pending, pairs, touches, seed);
            if peer == "tokio" {
                tokio_cost(&draws, pending, pairs)
            } else if peer == "delayqueue" {
                delayqueue_cost(&draws, pending, pairs)
            }
        }
        ("tokio", "storm") => tokio_storm(arg(&args, 3)),
        ("delayqueue", "storm") => delayqueue_storm(arg(&args, 3)),
        ("tokio", "lateness") => tokio_lateness(arg(&args, 3), arg(&args, 4)),
        _ => {}
    }
    fail("usage: precise-peer-tokio tokio|delayqueue cost|storm|lateness ...")
}
