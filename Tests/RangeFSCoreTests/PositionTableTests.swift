import Testing
@testable import RangeFSCore

@Test func positionTableFindsWhatWasAddedAndGrows() {
    // Keys whose hashes collide on purpose (every tenth the same), in a table that must grow.
    let keys = (0..<1000).map { "key \($0)" }
    func hash(_ index: Int) -> Int { index / 10 }
    var table = PositionTable()
    for index in keys.indices {
        table.insert(index, hash: hash(index), hashAt: hash)
    }
    #expect(table.count == 1000)
    for index in keys.indices {
        #expect(table.first(hash: hash(index)) { keys[$0] == keys[index] } == index)
    }
    #expect(table.first(hash: 5) { keys[$0] == "absent" } == nil)
    #expect(PositionTable(capacity: 100).first(hash: 0) { _ in true } == nil)
}
