import Testing
import Foundation
import APIModels
import Layout
import MediaCore

@Suite struct EncodingTests {
    @Test func compositionResponseIsExactJSON() throws {
        let destination = Destination(
            id: "2pBRKrNgX1ff", state: .starting,
            configuration: DestinationConfiguration(
                s3: S3DestinationConfiguration(
                    storageConfigurationArn: "arn:aws:ivs:ap-northeast-1:927810967299:storage-configuration/ZBcEbgBE24Cq",
                    encoderConfigurationArns: ["arn:aws:ivs:ap-northeast-1:927810967299:encoder-configuration/PAAwglkRtjge"],
                    thumbnailConfigurations: [CompositionThumbnailConfiguration(targetIntervalSeconds: 30, storage: [.latest, .sequential])])
            ).withDefaults(),
            detail: DestinationDetail(s3: S3Detail(recordingPrefix: "MNALAcH9j2EJ/s2AdaGUbvQgp/2pBRKrNgX1ff/composite")))
        let composition = Composition(
            arn: "arn:aws:ivs:ap-northeast-1:927810967299:composition/s2AdaGUbvQgp",
            stageArn: "arn:aws:ivs:ap-northeast-1:927810967299:stage/WyGkzNFGwiwr",
            state: .starting, layout: LayoutConfiguration(grid: GridConfiguration(gridGap: 2)),
            destinations: [destination], tags: [:], startTime: APITimestamp(iso8601: "2023-11-01T06:25:37Z"))
        let text = try APIJSON.encodeString(StartCompositionResponse(composition: composition))
        #expect(text == #"{"composition":{"arn":"arn:aws:ivs:ap-northeast-1:927810967299:composition/s2AdaGUbvQgp","destinations":[{"configuration":{"name":"","s3":{"encoderConfigurationArns":["arn:aws:ivs:ap-northeast-1:927810967299:encoder-configuration/PAAwglkRtjge"],"recordingConfiguration":{"format":"HLS","hlsConfiguration":{"targetSegmentDurationSeconds":2}},"storageConfigurationArn":"arn:aws:ivs:ap-northeast-1:927810967299:storage-configuration/ZBcEbgBE24Cq","thumbnailConfigurations":[{"storage":["LATEST","SEQUENTIAL"],"targetIntervalSeconds":30}]}},"detail":{"s3":{"recordingPrefix":"MNALAcH9j2EJ/s2AdaGUbvQgp/2pBRKrNgX1ff/composite"}},"id":"2pBRKrNgX1ff","state":"STARTING"}],"layout":{"grid":{"gridGap":2}},"stageArn":"arn:aws:ivs:ap-northeast-1:927810967299:stage/WyGkzNFGwiwr","startTime":"2023-11-01T06:25:37Z","state":"STARTING","tags":{}}}"#)
        let decoded = try APIJSON.decode(StartCompositionResponse.self, from: Data(text.utf8))
        #expect(decoded.composition == composition)

        let list = ListCompositionsResponse(compositions: [composition.summary])
        #expect(try APIJSON.encodeString(list) == #"{"compositions":[{"arn":"arn:aws:ivs:ap-northeast-1:927810967299:composition/s2AdaGUbvQgp","destinations":[{"id":"2pBRKrNgX1ff","state":"STARTING"}],"stageArn":"arn:aws:ivs:ap-northeast-1:927810967299:stage/WyGkzNFGwiwr","startTime":"2023-11-01T06:25:37Z","state":"STARTING","tags":{}}]}"#)
    }

    @Test func encoderConfigurationDefaults() throws {
        let arn = try #require(IVSARN(parsing: "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/9W590BY2M8s4"))
        let created = CreateEncoderConfigurationRequest().makeEncoderConfiguration(arn: arn)
        #expect(try APIJSON.encodeString(CreateEncoderConfigurationResponse(encoderConfiguration: created))
            == #"{"encoderConfiguration":{"arn":"arn:aws:ivs:us-east-1:123456789012:encoder-configuration/9W590BY2M8s4","name":"","tags":{},"video":{"bitrate":2500000,"framerate":30,"height":720,"width":1280}}}"#)
        let partial = CreateEncoderConfigurationRequest(name: "hd", video: Video(width: 1920, height: 1080, framerate: 29.97))
        #expect(partial.makeEncoderConfiguration(arn: arn).video == Video(width: 1920, height: 1080, framerate: 29.97, bitrate: 2_500_000))
        #expect(try APIJSON.encodeString(partial.makeEncoderConfiguration(arn: arn).video!)
            == #"{"bitrate":2500000,"framerate":29.97,"height":1080,"width":1920}"#)
    }

    @Test func frameRatesAreExactRationals() {
        #expect(Video(framerate: 30).frameRate == Rational(30, 1))
        #expect(Video().frameRate == Rational(30, 1))
        #expect(Video(framerate: 29.97).frameRate == Rational(30000, 1001))
        #expect(Video(framerate: 59.94).frameRate == Rational(60000, 1001))
        #expect(Video(framerate: 23.976).frameRate == Rational(24000, 1001))
        #expect(Video(framerate: 12.5).frameRate == Rational(25, 2))
    }

    @Test func emptyResponsesAndRequestsRoundTrip() throws {
        #expect(try APIJSON.encodeString(StopCompositionResponse()) == "{}")
        #expect(try APIJSON.encodeString(ListTagsForResourceResponse(tags: ["b": "2", "a": "1"])) == #"{"tags":{"a":"1","b":"2"}}"#)
        let request = StartCompositionRequest(stageArn: stage, idempotencyToken: "t", layout: .defaultGrid,
                                              destinations: [DestinationConfiguration(channel: .init(channelArn: channel))])
        let data = try APIJSON.encode(request)
        #expect(try APIJSON.decodeRequest(StartCompositionRequest.self, from: data) == request)
    }
}

@Suite struct PaginationTests {
    let items = (1...7).map { "arn:aws:ivs:us-east-1:1:composition/c\($0)" }.shuffled()

    @Test func pagesWalkEveryItemOnce() throws {
        var seen: [String] = []
        var token: String?
        var pages = 0
        repeat {
            let page = try Pagination.page(items, key: { $0 }, nextToken: token, maxResults: 3, defaultMaxResults: 100)
            seen += page.items
            token = page.nextToken
            pages += 1
            if let token { try ListCompositionsRequest(nextToken: token).validate() }
        } while token != nil
        #expect(pages == 3)
        #expect(seen == items.sorted())
    }

    @Test func exactPageHasNoToken() throws {
        let page = try Pagination.page(Array(items.prefix(3)), key: { $0 }, nextToken: nil, maxResults: 3, defaultMaxResults: 100)
        #expect(page.items.count == 3 && page.nextToken == nil)
        let all = try Pagination.page(items, key: { $0 }, nextToken: nil, maxResults: nil, defaultMaxResults: 100)
        #expect(all.items.count == 7 && all.nextToken == nil)
        #expect(Pagination.defaultMaxResults(for: .listStages) == 50)
        #expect(Pagination.defaultMaxResults(for: .listCompositions) == 100)
    }

    @Test func deletionBetweenPagesSkipsNothing() throws {
        let sorted = items.sorted()
        let first = try Pagination.page(sorted, key: { $0 }, nextToken: nil, maxResults: 2, defaultMaxResults: 100)
        let remaining = sorted.filter { $0 != sorted[1] }
        let second = try Pagination.page(remaining, key: { $0 }, nextToken: first.nextToken, maxResults: 2, defaultMaxResults: 100)
        #expect(second.items == [sorted[2], sorted[3]])
    }

    @Test func foreignTokensAreRejected() {
        #expect(throws: APIError.validation("nextToken: is not a token returned by this service")) {
            try Pagination.page(items, key: { $0 }, nextToken: "bm9wZQ==", maxResults: 2, defaultMaxResults: 100)
        }
        #expect(throws: APIError.validation("nextToken: is not a token returned by this service")) {
            try Pagination.page(items, key: { $0 }, nextToken: "!!!", maxResults: 2, defaultMaxResults: 100)
        }
    }
}
