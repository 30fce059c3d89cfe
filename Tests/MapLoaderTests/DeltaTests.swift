import Testing

/// Every patch-codec suite, run one test at a time.
///
/// The tests are synchronous and heavy on CPU, disk and zstd memory. Run side by side they
/// would hold the few threads of Swift's cooperative pool (two on a two-core machine) and
/// swell the process's resident size, starving and disturbing the async server tests that
/// share this test process. Serialized, they take at most one pool thread at a time.
@Suite(.serialized) enum DeltaTests {}
