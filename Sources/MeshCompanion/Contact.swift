// An owned contact: what ADD_UPDATE_CONTACT sends and CONTACT / NEW_ADVERT carry.

/// A contact as stored by the radio (§2.6), owned and fixed-size apart from the name.
public struct Contact: Sendable, Equatable {
    public var publicKey: PublicKey
    public var type: ContactType
    /// bit0 favourite; bits1..3 telemetry permissions granted to this contact.
    public var flags: UInt8
    /// Encoded out path length, or `.unknown` (send flood).
    public private(set) var outPathLength: PathLength
    @usableFromInline var pathStorage: FixedBytes64
    /// Name, ≤ 31 bytes.
    public var name: String
    public var lastAdvertTimestamp: UInt32
    /// Micro-degrees.
    public var latitude: Int32
    /// Micro-degrees.
    public var longitude: Int32
    /// Device clock of the last change.
    public var lastModified: UInt32

    public init(publicKey: PublicKey, type: ContactType = .chat, flags: UInt8 = 0, name: String,
                lastAdvertTimestamp: UInt32 = 0, latitude: Int32 = 0, longitude: Int32 = 0, lastModified: UInt32 = 0) {
        self.publicKey = publicKey
        self.type = type
        self.flags = flags
        self.outPathLength = .unknown
        self.pathStorage = .init(repeating: 0)
        self.name = name
        self.lastAdvertTimestamp = lastAdvertTimestamp
        self.latitude = latitude
        self.longitude = longitude
        self.lastModified = lastModified
    }

    /// The valid out path bytes, inside `body` only.
    public func withOutPath<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let n = outPathLength.isValid ? outPathLength.byteCount : 0
        return try withUnsafeBytes(of: pathStorage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    /// A copy of the out path bytes (allocates).
    public var outPath: [UInt8] { withOutPath { Array($0) } }

    /// Sets the path; `bytes.count` must equal `length.byteCount` and `length` must be valid
    /// (or `.unknown` with no bytes, meaning flood).
    public mutating func setOutPath(_ length: PathLength, _ bytes: some Collection<UInt8>) throws(CompanionEncodeError) {
        if length.isUnknown {
            if !bytes.isEmpty { throw .wrongLength(.path, length: bytes.count, expected: 0) }
        } else {
            if !length.isValid { throw .invalid(.pathLength) }
            if bytes.count != length.byteCount { throw .wrongLength(.path, length: bytes.count, expected: length.byteCount) }
        }
        outPathLength = length
        pathStorage = .init(repeating: 0)
        var i = 0
        for b in bytes { pathStorage[i] = b; i += 1 }
    }

    /// Forgets the path (the radio will send flood).
    public mutating func resetPath() {
        outPathLength = .unknown
        pathStorage = .init(repeating: 0)
    }

    mutating func setOutPath(unchecked length: PathLength, _ bytes: UnsafeRawBufferPointer) {
        outPathLength = length
        pathStorage = .init(repeating: 0)
        for i in 0 ..< min(64, bytes.count) { pathStorage[i] = bytes[i] }
    }

    public static func == (a: Contact, b: Contact) -> Bool {
        a.publicKey == b.publicKey && a.type == b.type && a.flags == b.flags && a.outPathLength == b.outPathLength
            && a.withOutPath { x in b.withOutPath { y in x.elementsEqual(y) } }
            && a.name == b.name && a.lastAdvertTimestamp == b.lastAdvertTimestamp && a.latitude == b.latitude
            && a.longitude == b.longitude && a.lastModified == b.lastModified
    }

    /// Checks the name length (the firmware keeps 31 bytes).
    func validate() throws(CompanionEncodeError) {
        let n = name.utf8.count
        if n > CompanionLimits.maxNameLength { throw .tooLong(.name, length: n, limit: CompanionLimits.maxNameLength) }
    }
}

extension EncodedFrame {
    /// Writes the 147 bytes after the code of a contact record (§2.6).
    mutating func append(contact c: Contact, includeTail: Bool = true) throws(CompanionEncodeError) {
        try c.validate()
        try append(key: c.publicKey)
        try append(c.type.rawValue)
        try append(c.flags)
        try append(c.outPathLength.rawValue)
        let pathStorage = c.pathStorage
        for i in 0..<64 { try append(pathStorage[i]) }
        try append(text: c.name, width: 32)
        try append(u32: c.lastAdvertTimestamp)
        try append(i32: c.latitude)
        try append(i32: c.longitude)
        if includeTail { try append(u32: c.lastModified) }
    }
}
