/// Lets a test see whether an object was deallocated (the package's tests: a handler released).
package final class WeakProbe<Object: AnyObject>: Sendable where Object: Sendable {
    package weak let object: Object?
    package init(_ object: Object) { self.object = object }
    package var isReleased: Bool { self.object == nil }
}

/// An object whose only job is to be captured and then released.
package final class Canary: Sendable {
    package init() {}
}
