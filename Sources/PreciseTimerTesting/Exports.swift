// `import PreciseTimerTesting` brings the whole API: the protocol, the values and the adapters live in
// `PreciseTimerCore` (no C), `TestTimerService` here.
@_exported import PreciseTimerCore
