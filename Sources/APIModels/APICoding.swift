// JSON in and out of the control plane: decoding errors become ValidationExceptions that
// name the field; encoding is deterministic (sorted keys, unescaped slashes in ARNs).
public import Foundation

public enum APIJSON {
    /// Decodes and validates a request body. An empty body counts as `{}` (botocore sends
    /// none for an operation called without parameters).
    public static func decodeRequest<Request: Decodable & APIRequest>(
        _ type: Request.Type, from body: Data, options: ValidationOptions = ValidationOptions()
    ) throws(APIError) -> Request {
        let request = try decode(type, from: body)
        try request.validate(options: options)
        return request
    }

    /// Decodes any model shape, turning `DecodingError`s into ValidationExceptions.
    public static func decode<T: Decodable>(_ type: T.Type, from body: Data) throws(APIError) -> T {
        let data = body.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 } ? Data("{}".utf8) : body
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw validationError(for: error)
        } catch {
            throw .validation("request body could not be read: \(error)")
        }
    }

    /// Encodes a response body: sorted keys, no escaped slashes, nil members left out.
    public static func encode<T: Encodable>(_ value: T) throws(APIError) -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw .internalServer("response could not be encoded")
        }
    }

    /// The same as `encode`, as text (for exact tests and logs).
    public static func encodeString<T: Encodable>(_ value: T) throws(APIError) -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func validationError(for error: DecodingError) -> APIError {
        switch error {
        case .keyNotFound(let key, let context):
            return Rule.fail(path(context.codingPath + [key]), "is required")
        case .valueNotFound(_, let context):
            return Rule.fail(path(context.codingPath), "must not be null")
        case .typeMismatch(let type, let context):
            return Rule.fail(path(context.codingPath), "expected \(jsonTypeName(type))")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return .validation("request body is not valid JSON") }
            return Rule.fail(path(context.codingPath), "invalid value (\(context.debugDescription))")
        @unknown default:
            return .validation("request body could not be read")
        }
    }

    /// `destinations[0].s3.encoderConfigurationArns`
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "body" : text
    }

    static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Float.Type, is Double.Type: "a number"
        case is Bool.Type: "a boolean"
        case is [Any].Type: "a list"
        default: String(describing: type).hasPrefix("Array") ? "a list" : "an object"
        }
    }
}
