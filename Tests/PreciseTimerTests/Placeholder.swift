import Testing
@testable import PreciseTimer
