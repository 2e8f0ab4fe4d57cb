// `import PreciseTimerTesting` brings the whole API: the protocol, the values and the adapters live in
// `PreciseTimerCore` (no engine), `TestTimerService` here.
@_exported import PreciseTimerCore
