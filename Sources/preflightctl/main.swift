import ArgumentParser
import Foundation

/// Runs the command tree with this tool's exit codes (ArgumentParser's own usage code is 64; ours is 2).
func runMain() -> Never {
    do {
        var command = try PreflightCtl.parseAsRoot()
        try command.run()
        exit(CtlExit.ok)
    } catch let failure as CtlFailure {
        writeStandardError("preflightctl: \(failure.message)\n")
        exit(failure.exitCode)
    } catch {
        let code = PreflightCtl.exitCode(for: error)
        if code == .success {
            // --help, --version, completion scripts and completion candidates.
            PreflightCtl.exit(withError: error)
        }
        writeStandardError(PreflightCtl.fullMessage(for: error) + "\n")
        exit(code == .validationFailure ? CtlExit.usage : code.rawValue)
    }
}

runMain()
