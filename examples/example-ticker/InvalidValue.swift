/// Why a command-line value was rejected. ArgumentParser prints ``description`` after the flag
/// and the value: `The value 'abc' is invalid for '--interval <duration>': missing or unknown unit…`.
struct InvalidValue: Error, CustomStringConvertible {
    /// The message shown to the user.
    let description: String
}
