import Testing

/// The suites that parse command lines, one after the other as when the parser kept what it
/// parsed last in the process (it keeps nothing now: a command gets the values it parsed).
@Suite(.serialized) enum CommandLineParsing {}
