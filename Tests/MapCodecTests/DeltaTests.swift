import Testing

/// Every patch-codec suite, grouped. They run in parallel in this target's own process
/// (scripts/test.sh runs each test target by itself), where no server test shares the
/// cooperative pool with them.
@Suite enum DeltaTests {}
