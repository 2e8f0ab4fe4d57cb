// `import PreciseTimerReference` brings the whole API: the protocol, the values and the adapters live in
// `PreciseTimerCore` (no engine), `DispatchReferenceTimer` here.
@_exported import PreciseTimerCore
