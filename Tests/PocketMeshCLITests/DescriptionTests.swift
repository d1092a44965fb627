import MeshAir
import MeshCompanion
import MeshDaemonClient
import MeshLink
@testable import MeshSession
import MeshStore
import Testing
@testable import pocketmesh

/// The runtime's name for an enum value's case, read from reflection metadata: what printing a
/// value without a description showed. The release binary has no reflection metadata
/// (-disable-reflection-metadata), so every type whose values are printed spells its cases out;
/// these tests hold those descriptions to what reflection printed (this debug build still has the
/// metadata), so the release binary prints the same.
@_silgen_name("swift_EnumCaseName")
func runtimeCaseName<T>(_ value: T) -> UnsafePointer<CChar>?

func reflectedName<T>(_ value: T) -> String? { runtimeCaseName(value).map { String(cString: $0) } }

@Suite struct DescriptionTests {
    @Test func caseNamesMatchReflection() {
        for c in CommandCode.allCases { #expect("\(c)" == reflectedName(c)) }
        for c in RouteType.allCases { #expect("\(c)" == reflectedName(c)) }
        for c in PayloadType.allCases { #expect("\(c)" == reflectedName(c)) }
        let phases: [ATTClient.Phase] = [.idle, .exchangingMTU, .discoveringService, .discoveringCharacteristics,
                                         .discoveringDescriptors, .subscribing, .ready, .failed]
        for p in phases { #expect("\(p)" == reflectedName(p)) }
        let airErrors: [AirError] = [.truncated, .tooLong, .reservedHashSize, .invalidPath, .payloadTooLong, .packetTooLong,
                                     .invalidField, .invalidKey, .reservedKeyPrefix, .macMismatch, .badSignature,
                                     .noMatchingSecret, .cryptoFailure]
        for e in airErrors { #expect("\(e)" == reflectedName(e)) }
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
