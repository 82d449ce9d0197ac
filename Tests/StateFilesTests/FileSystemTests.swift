import StateFiles
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder under /tmp, removed with everything in it when the test ends.
private final class Folder {
    let path: String

    init() {
        var template = Array("/tmp/statefiles-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    deinit {
        for name in names { unlink("\(path)/\(name)") }
        rmdir(path)
    }

    var names: [String] {
        guard let handle = opendir(path) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    func text(_ name: String) throws -> String? {
        try FileSystem.readFile("\(path)/\(name)").map { String(decoding: $0, as: UTF8.self) }
    }
}

@Suite struct FileSystemTests {
    @Test func atomicReplaceLeavesTheNewContentWithItsModeAndNoTemporary() throws {
        let folder = Folder()
        let path = "\(folder.path)/state.json"
        try FileSystem.writeAtomically(Array("old".utf8), to: path, mode: 0o644)
        try FileSystem.writeAtomically(Array("new".utf8), to: path, mode: 0o600)
        #expect(try folder.text("state.json") == "new")
        #expect(FileSystem.permissions(of: path) == 0o600)
        #expect(folder.names == ["state.json"])
    }

    @Test func aFailedReplaceKeepsTheOldFile() throws {
        let folder = Folder()
        let path = "\(folder.path)/state.json"
        try FileSystem.writeAtomically(Array("old".utf8), to: path, mode: 0o600)
        // A folder where the temporary file would go makes the write fail before the rename.
        try FileSystem.makeDirectory("\(path).tmp-\(getpid())", mode: 0o700)
        defer { rmdir("\(path).tmp-\(getpid())") }
        #expect(throws: SystemCallError.self) {
            try FileSystem.writeAtomically(Array("new".utf8), to: path, mode: 0o600)
        }
        #expect(try folder.text("state.json") == "old")
    }

    @Test func aTemporaryOfADeadProcessIsRemovedAndALiveOnesIsKept() throws {
        let folder = Folder()
        // pid 1 is alive; a pid beyond pid_max never is.
        try FileSystem.writeAtomically(Array("a".utf8), to: "\(folder.path)/x.tmp-1", mode: 0o600)
        try FileSystem.writeAtomically(Array("b".utf8), to: "\(folder.path)/y.tmp-99999999", mode: 0o600)
        #expect(FileSystem.removeStaleTemporaries(in: folder.path) == ["\(folder.path)/y.tmp-99999999"])
        #expect(folder.names == ["x.tmp-1"])
    }

    @Test func readsAreBoundedAndAMissingFileIsNil() throws {
        let folder = Folder()
        let path = "\(folder.path)/big"
        #expect(try FileSystem.readFile(path) == nil)
        try FileSystem.writeAtomically([UInt8](repeating: 0x61, count: 10_000), to: path, mode: 0o600)
        #expect(try FileSystem.readFile(path, limit: 10_000)?.count == 10_000)
        #expect(throws: SystemCallError(call: "read", path: path, errno: EFBIG)) {
            try FileSystem.readFile(path, limit: 9_999)
        }
    }

    @Test func moveAsideNeverReplacesAnEarlierCopy() throws {
        let folder = Folder()
        let path = "\(folder.path)/registration.json"
        for content in ["first", "second", "third"] {
            try FileSystem.writeAtomically(Array(content.utf8), to: path, mode: 0o600)
            try FileSystem.moveAside(path, stamp: 1_700_000_000)
        }
        #expect(
            folder.names == [
                "registration.json.corrupt-1700000000", "registration.json.corrupt-1700000000-2",
                "registration.json.corrupt-1700000000-3",
            ]
        )
        #expect(try folder.text("registration.json.corrupt-1700000000") == "first")
        #expect(try folder.text("registration.json.corrupt-1700000000-3") == "third")
        #expect(throws: SystemCallError.self) { try FileSystem.moveAside(path, stamp: 1) }
    }

    @Test func anAppendedFileGrowsSyncsAndEmpties() throws {
        let folder = Folder()
        let path = "\(folder.path)/journal"
        #expect(throws: SystemCallError.self) { try OpenFile.appending(to: path) }
        let file = try OpenFile.appending(to: path, creatingWith: 0o600)
        try file.writeAll(Array("one\n".utf8))
        try file.writeAll(Array("two\n".utf8))
        try file.sync()
        #expect(try folder.text("journal") == "one\ntwo\n")
        #expect(FileSystem.permissions(of: path) == 0o600)
        try file.truncate()
        try file.writeAll(Array("three\n".utf8))
        file.close()
        #expect(try folder.text("journal") == "three\n")
    }

    @Test func makeDirectoriesCreatesTheMissingParents() throws {
        let folder = Folder()
        let nested = "\(folder.path)/a/b"
        try FileSystem.makeDirectories(nested)
        try FileSystem.makeDirectories(nested)
        try FileSystem.writeAtomically(Array("x".utf8), to: "\(nested)/f", mode: 0o600)
        #expect(try FileSystem.readFile("\(nested)/f") == Array("x".utf8))
        try FileSystem.remove("\(nested)/f")
        try FileSystem.remove("\(nested)/f")
        rmdir(nested)
        rmdir("\(folder.path)/a")
    }
}
