import MeshNet

/// MeshNet's JSON and the operation layer's results (`Value`).
extension JSON {
    /// A result of the operation layer (`Value`) as the API sends it.
    public init(_ v: MeshOps.Value) {
        switch v {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .integer(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map { JSON($0) })
        case .object(let f): self = .object(f.map { ($0.key, JSON($0.value)) })
        }
    }

    /// The same as an operation-layer `Value` (integers stay integers).
    public var value: MeshOps.Value {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(\.value))
        case .object(let f): return .object(f.map { MeshOps.Value.Field($0.0, $0.1.value) })
        }
    }
}
