// `import PreciseTimer` brings the whole API: the protocol, the values and the adapters live in
// `PreciseTimerCore` (no C), the libevent engine here.
@_exported import PreciseTimerCore
