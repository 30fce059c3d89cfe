/// Runs blocking work (hashing, extraction, patching) on the global executor so the
/// actor stays responsive; cancelling the caller cancels the work, which polls
/// `Task.isCancelled`.
func offActor<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    let task = Task.detached(operation: work)
    return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
}
