extension TimerID {
    /// A token that cancels this timer when it is released; see ``TimerToken``.
    ///
    /// - Parameter service: The service that scheduled the timer (held weakly).
    public func token(on service: any TimerService) -> TimerToken {
        TimerToken(id: self, service: service)
    }
}
