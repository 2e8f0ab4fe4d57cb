// `import PreciseTimer` brings the whole API: the protocol, the values and the adapters live in
// `PreciseTimerCore` (no engine), the libevent engine here.
@_exported import PreciseTimerCore
