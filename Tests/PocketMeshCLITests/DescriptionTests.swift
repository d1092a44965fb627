import MeshAir
import MeshCompanion
import MeshDaemonClient
import MeshLink
@testable import MeshSession
import MeshStore
import Testing
@testable import pocketmesh
import MeshOps

/// No build of the program's modules carries reflection metadata (-disable-reflection-metadata in
/// every configuration, Package.swift), so this debug build prints values exactly as the release
/// binary does: a value printed without a description of its own prints its type's name, not its
/// case. Every type whose values are printed spells its cases out; these tests hold those
/// descriptions to what reflection printed (each case's name, its payload in parentheses).
func isCaseName(_ s: String) -> Bool {
    guard let first = s.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
    return s.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
}

func caseNamesAreDistinct<T>(_ values: [T], notTypeName name: String) -> Bool {
    let printed = values.map { "\($0)" }
    return Swift.Set(printed).count == values.count && printed.allSatisfy { isCaseName($0) && $0 != name }
}

@Suite struct DescriptionTests {
    @Test func caseNamesArePrinted() {
        #expect(caseNamesAreDistinct(Array(CommandCode.allCases), notTypeName: "CommandCode"))
        #expect(caseNamesAreDistinct(Array(RouteType.allCases), notTypeName: "RouteType"))
        #expect(caseNamesAreDistinct(Array(PayloadType.allCases), notTypeName: "PayloadType"))
        #expect("\(CommandCode.appStart)" == "appStart")
        #expect("\(RouteType.flood)" == "flood")
        #expect("\(PayloadType.advert)" == "advert")
        let phases: [ATTClient.Phase] = [.idle, .exchangingMTU, .discoveringService, .discoveringCharacteristics,
                                         .discoveringDescriptors, .subscribing, .ready, .failed]
        #expect(phases.map { "\($0)" } == ["idle", "exchangingMTU", "discoveringService", "discoveringCharacteristics",
                                          "discoveringDescriptors", "subscribing", "ready", "failed"])
        let airErrors: [AirError] = [.truncated, .tooLong, .reservedHashSize, .invalidPath, .payloadTooLong, .packetTooLong,
                                     .invalidField, .invalidKey, .reservedKeyPrefix, .macMismatch, .badSignature,
                                     .noMatchingSecret, .cryptoFailure]
        #expect(airErrors.map { "\($0)" } == ["truncated", "tooLong", "reservedHashSize", "invalidPath", "payloadTooLong",
                                             "packetTooLong", "invalidField", "invalidKey", "reservedKeyPrefix",
                                             "macMismatch", "badSignature", "noMatchingSecret", "cryptoFailure"])
        #expect("\(AirError.unsupportedVersion(2))" == "unsupportedVersion(2)")
    }

    @Test func valuesPrintAsReflectionPrintedThem() {
        #expect("\(LPPValue.scalar(1.5))" == "scalar(1.5)")
        #expect("\(LPPValue.vector(x: 0.5, y: -1.0, z: 2.0))" == "vector(x: 0.5, y: -1.0, z: 2.0)")
        #expect("\(LPPValue.gps(latitude: 45.5, longitude: -73.25, altitude: 20.0))"
                == "gps(latitude: 45.5, longitude: -73.25, altitude: 20.0)")
        #expect("\(LPPValue.colour(r: 1, g: 2, b: 255))" == "colour(r: 1, g: 2, b: 255)")
        #expect("\(LPPValue.unixTime(1_700_000_000))" == "unixTime(1700000000)")
        #expect("\(LPPError.unknownType(type: 200, offset: 3))" == "unknownType(type: 200, offset: 3)")
        #expect("\(LPPError.truncated(type: 136, offset: 4))" == "truncated(type: 136, offset: 4)")
        #expect("\(Reply.ok)" == "ok")
        #expect("\(Reply.error(2))" == "error(2)")
        #expect("\(Reply.timeout)" == "timeout")
        #expect("\(Reply.disabled)" == "disabled")
        #expect("\(Reply.sent)" == "sent")
        #expect("\(Reply.cancelled)" == "cancelled")
        #expect("\(Reply.frame([1, 2]))" == "frame([1, 2])")
        #expect("\(Reply.contacts(ContactListing(records: [[1]], total: 3, lastmod: 4)))"
                == "contacts(MeshSession.ContactListing(records: [[1]], total: 3, lastmod: 4))")
        #expect("\(Session.SubmitError.queueFull)" == "queueFull")
        #expect("\(Session.SubmitError.textTooLong(limit: 160))" == "textTooLong(limit: 160)")
        #expect("\(Session.SubmitError.badPublicKey)" == "badPublicKey")
        #expect("\(Session.SubmitError.notUsable)" == "notUsable")
        #expect("\(Session.SubmitError.invalid("a \"b\""))" == "invalid(\"a \\\"b\\\"\")")
        #expect("\(ReceivedMessage.ParseError.truncated(code: 16))" == "truncated(code: 16)")
        #expect("\(ReceivedMessage.ParseError.notAMessage(code: 7))" == "notAMessage(code: 7)")
        #expect("\(FileErrno(28))" == "FileErrno(code: 28)")
        #expect("\(ExitCode(3))" == "ExitCode(rawValue: 3)")
        #expect("\(CleanExit.message("v"))" == "message(\"v\")")
    }
}
