import Foundation

// precise-churn: the leak-check harness `scripts/check-leaks` runs under valgrind.
//
//     precise-churn [CYCLES]     # default 100000
//
// Prints one summary line and exits 0, or prints why and exits 1.
let arguments = CommandLine.arguments.dropFirst()
guard arguments.count <= 1, let cycles = Int(arguments.first ?? "100000"), cycles > 0 else {
    FileHandle.standardError.write(Data("usage: precise-churn [CYCLES]   (a whole number of at least 1)\n".utf8))
    exit(2)
}
do {
    print(try Churn(cycles: cycles).run())
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
