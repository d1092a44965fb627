// What the front ends print from the operation table: `pocketmesh ops --json` and the shell
// completion scripts (`pocketmesh completions bash|zsh|fish`).

extension OperationArgument {
    /// The argument as `ops --json` prints it.
    public var value: Value {
        var fields: [Value.Field] = [
            ("name", .string(name)),
            ("kind", .string(kind.rawValue)),
            ("type", .string(type.rawValue)),
            ("required", .bool(required)),
        ]
        if let short { fields.append(("short", .string(String(short)))) }
        if let valueName, kind != .positional { fields.append(("value_name", .string(valueName))) }
        fields.append(("default", defaultValue.map { .string($0) } ?? .null))
        if !choices.isEmpty { fields.append(("choices", .array(choices.map { .string($0) }))) }
        fields.append(("repeatable", .bool(repeatable)))
        if hidden { fields.append(("hidden", .bool(true))) }
        if !apiNames.isEmpty {
            fields.append(("api", .string(apiField)))
            if apiNames.count > 1 { fields.append(("api_aliases", .array(apiNames.dropFirst().map { .string($0) }))) }
        }
        if commandLineOnly { fields.append(("command_line_only", .bool(true))) }
        if let apiDefault { fields.append(("api_default", .string(apiDefault))) }
        if apiRequired { fields.append(("api_required", .bool(true))) }
        fields.append(("help", .string(help)))
        return .object(fields)
    }

    /// A field only the API takes (`send`'s `wait`), as `ops --json` prints it: marked `api_only`,
    /// with its API name.
    var apiOnlyValue: Value {
        guard case .object(var fields) = value else { return value }
        let at = fields.firstIndex { $0.key == "help" } ?? fields.endIndex
        var added: [Value.Field] = [("api_only", .bool(true))]
        if apiNames.isEmpty { added.insert(("api", .string(apiField)), at: 0) }
        fields.insert(contentsOf: added, at: at)
        return .object(fields)
    }
}

extension Operation {
    /// The row as `ops --json` prints it.
    public var value: Value {
        var fields: [Value.Field] = [
            ("cli", path.isEmpty ? .null : .string(cli)),
            ("api", api.map { .string($0) } ?? .null),
            ("class", opClass.map { .string($0.rawValue) } ?? .null),
            ("daemon", .bool(daemon)),
        ]
        if !aliases.isEmpty { fields.append(("aliases", .array(aliases.map { .string($0) }))) }
        if hidden { fields.append(("hidden", .bool(true))) }
        fields.append(("help", .string(help)))
        if !discussion.isEmpty { fields.append(("discussion", .string(discussion))) }
        fields.append(("args", .array(args.map(\.value) + apiOnly.map(\.apiOnlyValue))))
        var r: [Value.Field] = [("format", .string(result.format))]
        if result.shape != nil { r.append(("schema", .string(OperationTable.schemaName(self)))) }
        fields.append(("result", .object(r)))
        return .object(fields)
    }
}

extension OperationTable {
    /// `ops --json`: `{"operations":[...],"api_ops":[...]}`: one entry per operation of the command
    /// line (hidden internal ones left out), then one per op of the local API that no command runs
    /// (`ping`, the daemon's `status`, `subscribe`...: `cli` null). An argument only one door takes
    /// says so (`command_line_only`, `api_only`).
    public static var value: Value {
        .object([
            ("operations", .array(rows.filter { !$0.hidden }.map(\.value))),
            ("api_ops", .array(apiOnly.map(\.value))),
        ])
    }

    /// `ops` as text: one line per operation, its API name and class.
    public static var text: String {
        let shown = rows.filter { !$0.hidden }
        let width = shown.map(\.cli.count).max() ?? 0
        let apiWidth = (shown + apiOnly).map { ($0.api ?? "-").count }.max() ?? 0
        var out = ""
        for r in shown + apiOnly {
            let api = r.api ?? "-"
            let cli = r.path.isEmpty ? "-" : r.cli
            out += cli + String(repeating: " ", count: width - cli.count + 2)
            out += api + String(repeating: " ", count: apiWidth - api.count + 2)
            out += (r.opClass?.rawValue ?? "local") + "\n"
        }
        return out
    }

    public enum Shell: String, CaseIterable, Sendable { case bash, zsh, fish }

    /// The completion script for `shell`.
    public static func completions(_ shell: Shell) -> String {
        switch shell {
        case .bash: return Completions.bash()
        case .zsh: return Completions.zsh()
        case .fish: return Completions.fish()
        }
    }
}

extension OperationArgument {
    /// `--radio NAME`: a radio of the config file, which every command with a link takes. The
    /// grammar reads it before the parser (its link replaces the option), so it is in no row; help,
    /// the man page and the completions show it with the link options (`shown`).
    public static let radio: OperationArgument =
        .option("radio", value: "name", help: "A radio named in the config file ([radio.NAME]): its link and timeout, and the daemon's settings (default: POCKETMESH_RADIO, else the file's default_radio).")

    /// The arguments a command's help, man page and completions show: its row's (without the
    /// hidden ones), and `--radio` after its link options when it has a link and no `radio` of its own.
    public static func shown(_ row: Operation?) -> [OperationArgument] {
        let args = (row?.args ?? []).filter { !$0.hidden }
        guard args.contains(where: { $0.name == "tcp" }), !args.contains(where: { $0.name == "radio" }) else { return args }
        let at = (args.lastIndex { a in link.contains { $0.name == a.name && $0.kind == a.kind && $0.name != "json" } } ?? args.count - 1) + 1
        return Array(args[..<at]) + [radio] + Array(args[at...])
    }
}

/// The shell completion scripts, generated from the table: the command tree (with aliases), each
/// command's options (and which take a value), and the values of options and positional arguments
/// that take one of a fixed few.
enum Completions {
    /// Every node of the tree: "" (the root), groups and operations, with what follows each.
    struct Node {
        var path: String
        var subcommands: [(name: String, help: String)]
        var options: [OperationArgument]
        var positionals: [OperationArgument]
    }

    /// A node's key in the scripts' tables: its path after the program's name (shells' associative
    /// arrays take no empty key).
    static func key(_ path: String) -> String { path.isEmpty ? "pocketmesh" : "pocketmesh " + path }

    static var nodes: [Node] {
        var out: [Node] = []
        var paths: [[String]] = [[]]
        for g in OperationTable.groups where !g.hidden { paths.append(g.path) }
        for r in OperationTable.rows where !r.hidden { paths.append(r.path) }
        for p in paths {
            let row = p.isEmpty ? nil : OperationTable.row(p)
            var subs: [(String, String)] = []
            for w in OperationTable.children(of: p) {
                let child = p + [w]
                if let r = OperationTable.row(child) {
                    if r.hidden { continue }
                    subs.append((w, r.help))
                } else if let g = OperationTable.group(child) {
                    if g.hidden { continue }
                    subs.append((w, g.help))
                }
            }
            let args = OperationArgument.shown(row)
            out.append(Node(path: p.joined(separator: " "), subcommands: subs,
                            options: args.filter { $0.kind != .positional }, positionals: args.filter { $0.kind == .positional }))
        }
        return out
    }

    /// Alias words and the name they stand for, by their parent path.
    static var aliases: [(parent: String, alias: String, name: String)] {
        OperationTable.rows.flatMap { r in
            r.aliases.map { (r.path.dropLast().joined(separator: " "), $0, r.path.last!) }
        }
    }

    static func spellings(_ a: OperationArgument) -> [String] {
        (a.short.map { ["-\($0)"] } ?? []) + ["--\(a.name)"]
    }

    /// Options that take a value before the command path is known: every such option of any command.
    static var valuedAnywhere: [String] {
        var out: [String] = []
        for r in OperationTable.rows where !r.hidden {
            for a in OperationArgument.shown(r) where a.kind == .option {
                for s in spellings(a) where !out.contains(s) { out.append(s) }
            }
        }
        return out
    }

    /// `--radio` of the config file (not a stored radio's key): completed with the file's radio
    /// names, which the scripts ask the binary for (`pocketmesh completions radios`).
    static func takesConfiguredRadio(_ a: OperationArgument) -> Bool {
        a.name == OperationArgument.radio.name && a.help == OperationArgument.radio.help
    }

    static func takesFiles(_ a: OperationArgument) -> Bool {
        let v = a.valueName ?? ""
        return v == "path" && a.name != "path" || v.containsText("file") || a.name.hasSuffix("-file") || a.name == "socket" || a.name == "state-dir"
    }

    /// A single-quoted shell word.
    static func quoted(_ s: String) -> String {
        "'" + s.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    static func words(_ list: [String]) -> String { quoted(list.joined(separator: " ")) }

    // MARK: bash

    static func bash() -> String {
        var subs = "", opts = "", valued = "", files = "", choices = "", alias = ""
        for n in nodes {
            let k = quoted(key(n.path))
            if !n.subcommands.isEmpty { subs += "    [\(k)]=\(words(n.subcommands.map(\.name)))\n" }
            var o: [String] = []
            var v: [String] = []
            for a in n.options {
                o += spellings(a)
                if a.kind == .option {
                    v += spellings(a)
                    for s in spellings(a) {
                        if !a.choices.isEmpty { choices += "    [\(quoted(key(n.path) + " " + s))]=\(words(a.choices))\n" }
                        if takesFiles(a) { files += "    [\(quoted(key(n.path) + " " + s))]=1\n" }
                        if takesConfiguredRadio(a) { files += "    [\(quoted(key(n.path) + " " + s))]=radio\n" }
                    }
                }
            }
            if !n.path.isEmpty { o += ["-h", "--help"] }
            else { o += ["-h", "--help", "--version"] }
            opts += "    [\(k)]=\(words(o))\n"
            valued += "    [\(k)]=\(words(n.path.isEmpty ? valuedAnywhere : v))\n"
            for (i, p) in n.positionals.enumerated() where !p.choices.isEmpty {
                choices += "    [\(quoted(key(n.path) + " #\(i)"))]=\(words(p.choices))\n"
            }
        }
        files += "    [\(quoted(key("") + " --radio"))]=radio\n"
        for a in aliases { alias += "    [\(quoted(key(a.parent) + " " + a.alias))]=\(quoted(a.name))\n" }
        return """
        # bash completion for pocketmesh, generated from its operation table (pocketmesh completions bash).
        # Use: source <(pocketmesh completions bash)
        declare -gA _pocketmesh_subs=(
        \(subs))
        declare -gA _pocketmesh_opts=(
        \(opts))
        declare -gA _pocketmesh_valued=(
        \(valued))
        declare -gA _pocketmesh_files=(
        \(files))
        declare -gA _pocketmesh_choices=(
        \(choices))
        declare -gA _pocketmesh_alias=(
        \(alias))

        _pocketmesh() {
            local cur="${COMP_WORDS[COMP_CWORD]}" path=pocketmesh w key i npos=0 skip=0 ended=0 optname=""
            for ((i = 1; i < COMP_CWORD; i++)); do
                w="${COMP_WORDS[i]}"
                if ((skip)); then skip=0; continue; fi
                if ((!ended)) && [[ $w == -- ]]; then ended=1; continue; fi
                if ((!ended)) && [[ $w == -?* && $w != *" "* && ( $w == --[a-zA-Z]* || ${#w} -eq 2 ) ]]; then
                    if [[ $w != *=* && " ${_pocketmesh_valued[$path]} " == *" $w "* ]]; then skip=1; optname=$w; fi
                    continue
                fi
                key="$path $w"
                [[ -n ${_pocketmesh_alias[$key]+x} ]] && key="$path ${_pocketmesh_alias[$key]}"
                if ((npos == 0)) && [[ -n ${_pocketmesh_opts[$key]+x} ]]; then path=$key; else npos=$((npos + 1)); fi
            done
            COMPREPLY=()
            if ((skip)); then
                key="$path $optname"
                if [[ ${_pocketmesh_files[$key]-} == radio ]]; then
                    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completions radios 2>/dev/null)" -- "$cur"))
                elif [[ -n ${_pocketmesh_choices[$key]+x} ]]; then
                    COMPREPLY=($(compgen -W "${_pocketmesh_choices[$key]}" -- "$cur"))
                elif [[ -n ${_pocketmesh_files[$key]+x} ]]; then
                    COMPREPLY=($(compgen -f -- "$cur"))
                fi
                return 0
            fi
            if ((!ended)) && [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "${_pocketmesh_opts[$path]}" -- "$cur"))
                return 0
            fi
            local offer=""
            ((npos == 0)) && offer="${_pocketmesh_subs[$path]}"
            key="$path #$npos"
            [[ -n ${_pocketmesh_choices[$key]+x} ]] && offer="$offer ${_pocketmesh_choices[$key]}"
            COMPREPLY=($(compgen -W "$offer" -- "$cur"))
            return 0
        }
        complete -F _pocketmesh pocketmesh

        """
    }

    // MARK: zsh

    /// zsh: the same walk as bash's, over zsh's `words` and `CURRENT`, with each subcommand's help.
    static func zsh() -> String {
        var subs = "", opts = "", valued = "", files = "", choices = "", alias = ""
        for n in nodes {
            let k = quoted(key(n.path))
            if !n.subcommands.isEmpty {
                let described = n.subcommands.map { zshDescribed($0.name, $0.help) }
                subs += "  \(k) \(quoted(described.joined(separator: "\n")))\n"
            }
            var o: [String] = []
            var v: [String] = []
            for a in n.options {
                for s in spellings(a) { o.append(zshDescribed(s, a.help)) }
                if a.kind == .option {
                    v += spellings(a)
                    for s in spellings(a) {
                        if !a.choices.isEmpty { choices += "  \(quoted(key(n.path) + " " + s)) \(words(a.choices))\n" }
                        if takesFiles(a) { files += "  \(quoted(key(n.path) + " " + s)) 1\n" }
                        if takesConfiguredRadio(a) { files += "  \(quoted(key(n.path) + " " + s)) radio\n" }
                    }
                }
            }
            o += ["-h:Show help information.", "--help:Show help information."]
            opts += "  \(k) \(quoted(o.joined(separator: "\n")))\n"
            valued += "  \(k) \(words(n.path.isEmpty ? valuedAnywhere : v))\n"
            for (i, p) in n.positionals.enumerated() where !p.choices.isEmpty {
                choices += "  \(quoted(key(n.path) + " #\(i)")) \(words(p.choices))\n"
            }
        }
        files += "  \(quoted(key("") + " --radio")) radio\n"
        for a in aliases { alias += "  \(quoted(key(a.parent) + " " + a.alias)) \(quoted(a.name))\n" }
        return """
        #compdef pocketmesh
        # zsh completion for pocketmesh, generated from its operation table (pocketmesh completions zsh).
        # Use: pocketmesh completions zsh > "${fpath[1]}/_pocketmesh" (then compinit), or
        # source <(pocketmesh completions zsh) after compinit.
        typeset -gA _pocketmesh_subs _pocketmesh_opts _pocketmesh_valued _pocketmesh_files _pocketmesh_choices _pocketmesh_alias
        _pocketmesh_subs=(
        \(subs))
        _pocketmesh_opts=(
        \(opts))
        _pocketmesh_valued=(
        \(valued))
        _pocketmesh_files=(
        \(files))
        _pocketmesh_choices=(
        \(choices))
        _pocketmesh_alias=(
        \(alias))

        _pocketmesh() {
            # The binary, found before the local `path` (zsh's array tied to PATH) hides PATH.
            local bin=${words[1]}
            [[ $bin == */* ]] || bin=${commands[$bin]:-$bin}
            local cur=${words[CURRENT]} path=pocketmesh w key optname="" i
            integer npos=0 skip=0 ended=0
            for ((i = 2; i < CURRENT; i++)); do
                w=${words[i]}
                if ((skip)); then skip=0; continue; fi
                if ((!ended)) && [[ $w == -- ]]; then ended=1; continue; fi
                if ((!ended)) && [[ $w == -?* && $w != *" "* && ( $w == --[a-zA-Z]* || ${#w} -eq 2 ) ]]; then
                    if [[ $w != *=* && " ${_pocketmesh_valued[$path]} " == *" $w "* ]]; then skip=1; optname=$w; fi
                    continue
                fi
                key="$path $w"
                (( ${+_pocketmesh_alias[$key]} )) && key="$path ${_pocketmesh_alias[$key]}"
                if ((npos == 0)) && (( ${+_pocketmesh_opts[$key]} )); then path=$key; else npos+=1; fi
            done
            if ((skip)); then
                key="$path $optname"
                if [[ ${_pocketmesh_files[$key]-} == radio ]]; then
                    compadd -- ${(f)"$($bin completions radios 2>/dev/null)"}
                elif (( ${+_pocketmesh_choices[$key]} )); then
                    compadd -- ${=_pocketmesh_choices[$key]}
                elif (( ${+_pocketmesh_files[$key]} )); then
                    _files
                fi
                return
            fi
            local -a described
            if ((!ended)) && [[ $cur == -* ]]; then
                described=("${(@f)_pocketmesh_opts[$path]}")
                _describe -t options option described
                return
            fi
            if ((npos == 0)) && (( ${+_pocketmesh_subs[$path]} )); then
                described=("${(@f)_pocketmesh_subs[$path]}")
                _describe -t commands command described
            fi
            key="$path #$npos"
            (( ${+_pocketmesh_choices[$key]} )) && compadd -- ${=_pocketmesh_choices[$key]}
        }

        if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
            _pocketmesh "$@"
        else
            compdef _pocketmesh pocketmesh
        fi

        """
    }

    /// `name:help` for `_describe` (colons in the name escaped; the help's first sentence).
    static func zshDescribed(_ name: String, _ help: String) -> String {
        name.replacingColons + ":" + firstSentence(help)
    }

    static func firstSentence(_ help: String) -> String {
        var s = help
        if let nl = s.firstIndex(of: "\n") { s = String(s[..<nl]) }
        if s.count > 80 { s = String(s.prefix(77)) + "..." }
        return s
    }

    // MARK: fish

    /// fish: one `complete` line per subcommand and option, conditioned on the command path so far
    /// (worked out by `__pocketmesh_path` with the same walk as bash's).
    static func fish() -> String {
        var lines: [String] = []
        var valued: [String] = []
        for n in nodes {
            for a in n.options where a.kind == .option { for s in spellings(a) where !valued.contains("\(n.path)|\(s)") { valued.append("\(n.path)|\(s)") } }
        }
        for s in valuedAnywhere { valued.append("|\(s)") }
        var aliasLines: [String] = []
        for a in aliases { aliasLines.append("        case \(quoted(a.parent.isEmpty ? a.alias : a.parent + " " + a.alias)); set key \(quoted((a.parent.isEmpty ? "" : a.parent + " ") + a.name))") }
        var known: [String] = []
        for n in nodes { known.append(quoted(n.path)) }
        for n in nodes {
            let cond = "'__pocketmesh_at \(fishEscaped(n.path))'"
            for s in n.subcommands {
                lines.append("complete -c pocketmesh -f -n \(cond) -a \(quoted(s.name)) -d \(quoted(firstSentence(s.help)))")
            }
            for a in n.options {
                var l = "complete -c pocketmesh -n '__pocketmesh_in \(fishEscaped(n.path))'"
                if let c = a.short { l += " -s \(c)" }
                l += " -l \(a.name)"
                if a.kind == .option {
                    l += " -r"
                    if takesConfiguredRadio(a) { l += " -f -a '(pocketmesh completions radios 2>/dev/null)'" }
                    else if !a.choices.isEmpty { l += " -f -a \(words(a.choices))" } else if !takesFiles(a) { l += " -f" }
                }
                l += " -d \(quoted(firstSentence(a.help)))"
                lines.append(l)
            }
            for (i, p) in n.positionals.enumerated() where !p.choices.isEmpty {
                lines.append("complete -c pocketmesh -f -n '__pocketmesh_at \(fishEscaped(n.path)) \(i)' -a \(words(p.choices))")
            }
        }
        lines.append("complete -c pocketmesh -n '__pocketmesh_in \(fishEscaped(""))' -l radio -r -f -a '(pocketmesh completions radios 2>/dev/null)' -d \(quoted(firstSentence(OperationArgument.radio.help)))")
        return """
        # fish completion for pocketmesh, generated from its operation table (pocketmesh completions fish).
        # Use: pocketmesh completions fish > ~/.config/fish/completions/pocketmesh.fish

        # The command path typed so far, then the count of values after it, one per line.
        function __pocketmesh_walk
            set -l valued \(valued.map(quoted).joined(separator: " "))
            set -l known \(known.joined(separator: " "))
            set -l words (commandline -opc)
            set -e words[1]
            set -l path ''
            set -l npos 0
            set -l skip 0
            set -l ended 0
            for w in $words
                if test $skip = 1
                    set skip 0
                    continue
                end
                if test $ended = 0; and test "$w" = --
                    set ended 1
                    continue
                end
                if test $ended = 0; and string match -qr -- '^(--[a-zA-Z][^ ]*|-[a-zA-Z])$' $w
                    if not string match -q -- '*=*' $w; and contains -- "$path|$w" $valued
                        set skip 1
                    end
                    continue
                end
                set -l key (string trim -- "$path $w")
                switch $key
        \(aliasLines.joined(separator: "\n"))
                end
                if test $npos = 0; and contains -- "$key" $known
                    set path $key
                else
                    set npos (math $npos + 1)
                end
            end
            echo $path
            echo $npos
            echo $skip
        end

        # True when the command path is $argv[1] (and, with $argv[2], that many values follow it).
        function __pocketmesh_at
            set -l state (__pocketmesh_walk)
            test "$state[1]" = "$argv[1]"; or return 1
            test "$state[3]" = 0; or return 1
            if set -q argv[2]
                test "$state[2]" = "$argv[2]"
            else
                test "$state[2]" = 0; or string match -q -- '-*' (commandline -ct)
            end
        end

        # True when the command path is $argv[1], whatever follows it (for its options and their values).
        function __pocketmesh_in
            set -l state (__pocketmesh_walk)
            test "$state[1]" = "$argv[1]"
        end

        complete -c pocketmesh -f
        \(lines.joined(separator: "\n"))

        """
    }

    static func fishEscaped(_ s: String) -> String {
        s.isEmpty ? "\"\"" : "\"\(s)\""
    }
}

extension String {
    var replacingColons: String {
        var out = ""
        for c in self { if c == ":" { out += "\\:" } else { out.append(c) } }
        return out
    }
}
