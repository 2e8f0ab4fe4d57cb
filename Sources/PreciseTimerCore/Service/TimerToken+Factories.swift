extension TimerID {
    /// A token that cancels the timer now scheduled under this ID when it is released; see
    /// ``TimerToken`` (and prefer ``TimerHandle/token(on:)``, which names one timer for sure).
    ///
    /// - Parameter service: The service that scheduled the timer (held weakly).
    @available(*, deprecated, message: "Use the TimerHandle that scheduleTimer returns: handle.token(on:)")
    public func token(on service: any TimerService) -> TimerToken {
        TimerToken(id: self, service: service)
    }
}

extension TimerHandle {
    /// A token that cancels exactly this timer when it is released; see ``TimerToken``.
    ///
    /// - Parameter service: The service that scheduled the timer (held weakly).
    public func token(on service: any TimerService) -> TimerToken {
        TimerToken(self, service: service)
    }
}
