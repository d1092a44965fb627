import Testing

/// The suites that parse command lines, one after the other: the parser notes a command's
/// argument wrappers as they are created and keeps what it parsed last in the process's own
/// state (the command line parses once, on one thread), so two tests parsing at once would read
/// each other's. Swift Testing runs suites in parallel otherwise.
@Suite(.serialized) enum CommandLineParsing {}
