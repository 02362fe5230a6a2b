// A misbehaving S3 endpoint: the shared scripted loopback server, answering S3 error documents.
import HTTPTestSupport

typealias ScriptedS3Server = ScriptedHTTPServer
typealias ScriptedReply = ScriptedHTTPReply

extension ScriptedHTTPReply {
    static func s3Error(_ status: Int, code: String, message: String) -> ScriptedHTTPReply {
        ScriptedHTTPReply(status: status, body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                          + "<Error><Code>\(code)</Code><Message>\(message)</Message><RequestId>1</RequestId></Error>",
                          contentType: "application/xml")
    }
}
