// The routing table and list defaults checked against botocore's ivs-realtime model
// (data/ivs-realtime/2020-07-14/service-2.json.gz, botocore 1.44.8): each row below was
// copied from the model's `http` trait and `errors` list, in the model's order.
import APIModels
import Testing

@Suite struct ModelTableTests {
    /// (operation, method, requestUri, responseCode, errors)
    static let model: [(String, String, String, Int, [APIError.Code])] = [
        ("StartComposition", "POST", "/StartComposition", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("StopComposition", "POST", "/StopComposition", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("GetComposition", "POST", "/GetComposition", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("ListCompositions", "POST", "/ListCompositions", 200, [.validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("CreateEncoderConfiguration", "POST", "/CreateEncoderConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("GetEncoderConfiguration", "POST", "/GetEncoderConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("ListEncoderConfigurations", "POST", "/ListEncoderConfigurations", 200, [.validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("DeleteEncoderConfiguration", "POST", "/DeleteEncoderConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("CreateStorageConfiguration", "POST", "/CreateStorageConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("GetStorageConfiguration", "POST", "/GetStorageConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("ListStorageConfigurations", "POST", "/ListStorageConfigurations", 200, [.validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("DeleteStorageConfiguration", "POST", "/DeleteStorageConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]),
        ("CreateStage", "POST", "/CreateStage", 200, [.validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]),
        ("GetStage", "POST", "/GetStage", 200, [.resourceNotFound, .validation, .accessDenied]),
        ("ListStages", "POST", "/ListStages", 200, [.validation, .accessDenied, .conflict]),
        ("DeleteStage", "POST", "/DeleteStage", 200, [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]),
        ("UpdateStage", "POST", "/UpdateStage", 200, [.resourceNotFound, .validation, .accessDenied, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("ListStageSessions", "POST", "/ListStageSessions", 200, [.validation, .accessDenied]),
        ("GetStageSession", "POST", "/GetStageSession", 200, [.resourceNotFound, .validation, .accessDenied]),
        ("ListParticipants", "POST", "/ListParticipants", 200, [.validation, .accessDenied]),
        ("GetParticipant", "POST", "/GetParticipant", 200, [.resourceNotFound, .validation, .accessDenied]),
        ("ListParticipantEvents", "POST", "/ListParticipantEvents", 200, [.validation, .accessDenied]),
        ("DisconnectParticipant", "POST", "/DisconnectParticipant", 200, [.resourceNotFound, .validation, .accessDenied, .pendingVerification]),
        ("CreateIngestConfiguration", "POST", "/CreateIngestConfiguration", 200, [.validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]),
        ("GetIngestConfiguration", "POST", "/GetIngestConfiguration", 200, [.resourceNotFound, .validation, .accessDenied]),
        ("ListIngestConfigurations", "POST", "/ListIngestConfigurations", 200, [.validation, .accessDenied]),
        ("UpdateIngestConfiguration", "POST", "/UpdateIngestConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]),
        ("DeleteIngestConfiguration", "POST", "/DeleteIngestConfiguration", 200, [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]),
        ("CreateParticipantToken", "POST", "/CreateParticipantToken", 200, [.resourceNotFound, .validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]),
        ("ImportPublicKey", "POST", "/ImportPublicKey", 200, [.validation, .accessDenied, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("GetPublicKey", "POST", "/GetPublicKey", 200, [.resourceNotFound, .validation, .accessDenied]),
        ("ListPublicKeys", "POST", "/ListPublicKeys", 200, [.validation, .accessDenied]),
        ("DeletePublicKey", "POST", "/DeletePublicKey", 200, [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]),
        ("TagResource", "POST", "/tags/{resourceArn}", 200, [.resourceNotFound, .validation, .internalServer]),
        ("UntagResource", "DELETE", "/tags/{resourceArn}", 200, [.resourceNotFound, .validation, .internalServer]),
        ("ListTagsForResource", "GET", "/tags/{resourceArn}", 200, [.resourceNotFound, .validation, .internalServer]),
        ("StartParticipantReplication", "POST", "/StartParticipantReplication", 200,
         [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]),
        ("StopParticipantReplication", "POST", "/StopParticipantReplication", 200,
         [.resourceNotFound, .validation, .accessDenied, .internalServer]),
        ("ListParticipantReplicas", "POST", "/ListParticipantReplicas", 200, [.validation, .accessDenied]),
        ("RevokeConnectionToken", "POST", "/RevokeConnectionToken", 200, [.validation, .accessDenied, .internalServer]),
    ]

    @Test func everyServedOperationIsInTheModelTable() {
        // All 40 of the model's operations, and the extensions (SPEC §9) beside them.
        #expect(Set(APIOperation.modelOperations.map(\.name)) == Set(Self.model.map(\.0)))
        #expect(APIOperation.modelOperations.count == Self.model.count)
        #expect(APIOperation.allCases.filter(\.isExtension).map(\.name) == ["UpdateComposition", "UpdateParticipant"])
        for operation in APIOperation.allCases where operation.isExtension {
            #expect(!Self.model.contains { $0.0 == operation.name })
            #expect(operation.httpMethod == .post && operation.requestURI == "/" + operation.name && operation.hasJSONBody)
            #expect(APIOperation.jsonBodyRequests.contains { $0.operation == operation })
        }
    }

    @Test(arguments: model.indices)
    func bindingAndErrorsMatchTheModel(index: Int) throws {
        let (name, method, uri, code, errors) = Self.model[index]
        let operation = try #require(APIOperation(rawValue: name))
        #expect(operation.httpMethod.rawValue == method)
        #expect(operation.requestURI == uri)
        #expect(operation.successCode == code)
        #expect(operation.modeledErrors == errors)
        if uri == "/" + name {
            #expect(APIOperation.route(method: method, path: uri) == .init(operation: operation, resourceArn: nil))
            #expect(operation.hasJSONBody)
        }
    }

    /// Each list operation's documented `maxResults` default.
    @Test(arguments: [
        (APIOperation.listCompositions, 100), (.listEncoderConfigurations, 100), (.listStorageConfigurations, 100),
        (.listStages, 50), (.listStageSessions, 50), (.listParticipants, 50), (.listParticipantEvents, 50),
        (.listIngestConfigurations, 50), (.listPublicKeys, 50),
    ])
    func listDefaults(operation: APIOperation, defaultMaxResults: Int) {
        #expect(Pagination.defaultMaxResults(for: operation) == defaultMaxResults)
    }

    @Test func newResourceTypesAreTaggable() throws {
        for arn in ["arn:aws:ivs:us-east-1:123456789012:ingest-configuration/AbCdEf123456",
                    "arn:aws:ivs:us-west-2:123456789012:public-key/f99cde61-c2b0-4df3-8941-ca7d38acca1a"] {
            let path = APIOperation.tagsPath(for: arn)
            #expect(APIOperation.route(method: "POST", path: path) == .init(operation: .tagResource, resourceArn: arn))
            try TagResourceRequest(resourceArn: arn, tags: ["team": "video"]).validate()
            try UntagResourceRequest(resourceArn: arn, tagKeys: ["team"]).validate()
            try ListTagsForResourceRequest(resourceArn: arn).validate()
        }
    }
}
