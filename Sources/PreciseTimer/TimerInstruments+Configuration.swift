import PreciseTimerCore

extension TimerInstruments {
    /// The instruments a ``PreciseTimer/Configuration`` asks for.
    package convenience init(_ configuration: PreciseTimer.Configuration) {
        self.init(
            logger: configuration.logger, metrics: configuration.metrics, stallThreshold: configuration.stallThreshold)
    }
}
