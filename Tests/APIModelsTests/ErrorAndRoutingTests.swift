import TestSupport
import Testing
import APIModels

@Suite struct APIErrorTests {
    @Test(arguments: [
        (APIError.Code.validation, 400), (.accessDenied, 403), (.resourceNotFound, 404), (.conflict, 409),
        (.serviceQuotaExceeded, 402), (.internalServer, 500), (.pendingVerification, 403),
    ])
    func statusCodes(code: APIError.Code, status: Int) {
        #expect(code.httpStatus == status)
        #expect(APIError(code, "x").response.status == status)
    }

    @Test func renderingIsExactAndBotocoreReadable() {
        let error = APIError.validation("destinations[0].s3.encoderConfigurationArns: must contain exactly 1 item (got 2)")
        let response = error.response
        #expect(response.status == 400)
        #expect(response.headers.map(\.0) == ["Content-Type", "x-amzn-ErrorType"])
        #expect(response.headers.map(\.1) == ["application/json", "ValidationException"])
        #expect(response.body == #"{"exceptionMessage":"destinations[0].s3.encoderConfigurationArns: must contain exactly 1 item (got 2)","message":"destinations[0].s3.encoderConfigurationArns: must contain exactly 1 item (got 2)"}"#)
    }

    @Test func messageEscaping() {
        let body = APIError.conflict("channel \"x\"\n\\ /").response.body
        #expect(body == #"{"exceptionMessage":"channel \"x\"\n\\ /","message":"channel \"x\"\n\\ /"}"#)
        #expect(APIError.conflict("channel").response.headers.last?.1 == "ConflictException")
    }
}

@Suite struct APIOperationTests {
    @Test func everyPostOperationRoutes() {
        for operation in APIOperation.allCases where operation.httpMethod == .post && operation != .tagResource {
            #expect(operation.requestURI == "/" + operation.name)
            #expect(APIOperation.route(method: "POST", path: "/" + operation.name) == .init(operation: operation, resourceArn: nil))
            #expect(APIOperation.route(method: "GET", path: "/" + operation.name) == nil)
        }
        #expect(APIOperation.modelOperations.count == 40)
        #expect(APIOperation.allCases.count == 42)
        #expect(APIOperation.allCases.allSatisfy { $0.successCode == 200 })
    }

    @Test func taggingRoutesDecodeTheARN() {
        let arn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEf123456"
        let path = APIOperation.tagsPath(for: arn)
        #expect(path == "/tags/arn%3Aaws%3Aivs%3Aus-east-1%3A123456789012%3Astage%2FAbCdEf123456")
        #expect(APIOperation.route(method: "POST", path: path) == .init(operation: .tagResource, resourceArn: arn))
        #expect(APIOperation.route(method: "GET", path: path) == .init(operation: .listTagsForResource, resourceArn: arn))
        #expect(APIOperation.route(method: "DELETE", path: path) == .init(operation: .untagResource, resourceArn: arn))
        #expect(APIOperation.route(method: "PUT", path: path) == nil)
        #expect(APIOperation.route(method: "GET", path: "/tags/%zz") == nil)
        #expect(APIOperation.route(method: "POST", path: "/tags/") == nil)
        #expect(APIOperation.tagResource.httpMethod == .post)
        #expect(APIOperation.untagResource.httpMethod == .delete)
        #expect(APIOperation.listTagsForResource.httpMethod == .get)
        #expect(!APIOperation.untagResource.hasJSONBody && APIOperation.tagResource.hasJSONBody)
    }

    @Test func unknownPathsDoNotRoute() {
        // Operations of other IVS APIs, and near misses.
        #expect(APIOperation.route(method: "POST", path: "/CreateChannel") == nil)
        #expect(APIOperation.route(method: "POST", path: "/ListParticipantReplica") == nil)
        #expect(APIOperation.route(method: "POST", path: "/StartComposition/") == nil)
        #expect(APIOperation.route(method: "POST", path: "StartComposition") == nil)
        #expect(APIOperation.route(method: "post", path: "/StartComposition")?.operation == .startComposition)
    }

    @Test func untagQueryParsing() throws {
        let request = try UntagResourceRequest(resourceArn: "arn:aws:ivs:us-east-1:1:stage/a",
                                               query: "tagKeys=env&other=1&tagKeys=team%20name&tagKeys=a+b")
        #expect(request.tagKeys == ["env", "team name", "a b"])
        #expect(throws: APIError.validation("tagKeys: invalid percent-encoding")) {
            try UntagResourceRequest(resourceArn: "arn:aws:ivs:us-east-1:1:stage/a", query: "tagKeys=%g1")
        }
    }
}

@Suite struct IdentifierTests {
    @Test func generatedIDsAreTwelveAlphanumerics() {
        var a = SeededGenerator(seed: 42)
        var b = SeededGenerator(seed: 42)
        let first = ResourceID.random(using: &a)
        #expect(first == ResourceID.random(using: &b))
        #expect(first.rawValue.count == 12)
        #expect(first.rawValue.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(ResourceID.random(using: &a) != first)
        #expect(ResourceID("abc") == nil)
        #expect(ResourceID("abcdefghij-1") == nil)
        #expect(ResourceID("abcdefghij12") != nil)
    }

    @Test func arnBuildAndParse() throws {
        let context = try #require(ARNContext(region: "eu-west-1", account: "123456789012"))
        let arn = context.arn(.encoderConfiguration, id: try #require(ResourceID("9W590BY2M8s4")))
        #expect(arn.description == "arn:aws:ivs:eu-west-1:123456789012:encoder-configuration/9W590BY2M8s4")
        #expect(IVSARN(parsing: arn.description) == arn)
        #expect(IVSARN(parsing: arn.description, expecting: .encoderConfiguration) == arn)
        #expect(IVSARN(parsing: arn.description, expecting: .stage) == nil)
        #expect(context.owns(arn))
        #expect(!context.owns(try #require(IVSARN(parsing: "arn:aws:ivs:us-east-1:123456789012:stage/x"))))
        #expect(ARNContext(region: "EU", account: "1") == nil)
        #expect(ARNContext(region: "eu-west-1", account: "12a") == nil)
    }

    @Test(arguments: [
        "arn:aws:ivs:us-east-1:123456789012:stage/../../etc",
        "arn:aws:ivs:us-east-1:123456789012:stage/a/b",
        "arn:aws:ivs:us-east-1:123456789012:stage/",
        "arn:aws:ivs:US-EAST-1:123456789012:stage/abc",
        "arn:aws:ivs:us-east-1:1234x:stage/abc",
        "arn:aws:ivs:us-east-1::stage/abc",
        "arn:aws:ivs:us-east-1:123:stages/abc",
        "arn:aws:s3:us-east-1:123:stage/abc",
        "arn:aws:ivs:us-east-1:123:stage/abc%00",
        "arn:aws:ivs:us-east-1:123:stage/abc def",
        "arn:aws:ivs:us-east-1:123:stage",
        "",
    ])
    func malformedARNsAreRejected(text: String) {
        #expect(IVSARN(parsing: text) == nil)
    }

    @Test func arnLengthLimit() {
        let prefix = "arn:aws:ivs:us-east-1:123456789012:stage/"
        let fits = prefix + String(repeating: "a", count: 128 - prefix.count)
        #expect(IVSARN(parsing: fits) != nil)
        #expect(IVSARN(parsing: fits + "a") == nil)
    }
}

@Suite struct TimestampTests {
    @Test func formatsLikeIVS() {
        #expect(APITimestamp(secondsSince1970: 0).description == "1970-01-01T00:00:00Z")
        #expect(APITimestamp(secondsSince1970: 1_695_850_358).description == "2023-09-27T21:32:38Z")
        #expect(APITimestamp(secondsSince1970: 951_782_400).description == "2000-02-29T00:00:00Z")
        #expect(APITimestamp(secondsSince1970: -1).description == "1969-12-31T23:59:59Z")
    }

    @Test func parsesCommonISO8601Forms() {
        #expect(APITimestamp(iso8601: "2023-09-27T21:32:38Z")?.secondsSince1970 == 1_695_850_358)
        #expect(APITimestamp(iso8601: "2023-09-27T21:32:38.123Z")?.secondsSince1970 == 1_695_850_358)
        #expect(APITimestamp(iso8601: "2023-09-27T21:32:38+00:00")?.secondsSince1970 == 1_695_850_358)
        #expect(APITimestamp(iso8601: "2023-09-27T23:32:38+02:00")?.secondsSince1970 == 1_695_850_358)
        #expect(APITimestamp(iso8601: "2023-02-29T00:00:00Z") == nil)
        #expect(APITimestamp(iso8601: "2023-09-27 21:32:38Z") == nil)
        #expect(APITimestamp(iso8601: "2023-09-27T21:32:38") == nil)
        #expect(APITimestamp(iso8601: "2023-09-27T24:00:00Z") == nil)
    }
}

@Suite struct RoutePathTests {
    @Test("a route's path and method (what a forwarded call is sent to) route back to the same route, for every operation",
          arguments: APIOperation.allCases)
    func roundTrip(operation: APIOperation) {
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl"
        let route = APIOperation.Route(operation: operation, resourceArn: operation.requestURI.contains("{resourceArn}") ? arn : nil)
        #expect(APIOperation.route(method: operation.httpMethod.rawValue, path: route.path) == route)
    }
}

