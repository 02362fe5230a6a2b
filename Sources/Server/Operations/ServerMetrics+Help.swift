// What every metric on /metrics means: its `# HELP` line, by metric name. A metric missing
// here has no HELP line (ControlPlaneRouterTests checks that none is missing).
extension ServerMetrics {
    public static let help: [String: String] = {
        var help = [
            "stage_compositor_build_info": "The running build: its version and commit, always 1.",
            "stage_compositor_fleet_lease_age_seconds":
                "Fleet: seconds since this node last renewed its lease; past the lease's TTL the node fences itself.",
            "stage_compositor_fleet_database_errors_total":
                "Fleet: calls to the database that failed, by operation (renew, outbox_append, outbox_deliver).",
            "stage_compositor_fleet_outbox_backlog":
                "Fleet: events waiting in the outbox (not_appended: on this node, not yet in the database; not_delivered: found undelivered by the delivering node at its last look).",
            "process_cpu_seconds_total": "User and system CPU time of this process, in seconds.",
            "process_resident_memory_bytes": "Resident memory of this process, in bytes.",
            "process_open_fds": "Open file descriptors of this process.",
            "stage_compositor_api_requests_total":
                "Control-plane API requests answered, by operation (unknown: no such operation) and HTTP status code.",
            "stage_compositor_connections_open": "Connections open now, by listener (ingest: RTMP and RTMPS; api: HTTP API; whip: WHIP sessions).",
            "stage_compositor_connections_refused": "Connections refused by the listener's cap since start, by listener.",
            "stage_compositor_compositions": "Compositions known to this node, by state.",
            "stage_compositor_destinations": "Destinations of the compositions known to this node, by state.",
            "stage_compositor_publishers": "Participants publishing to the stages of running compositions.",
            "stage_compositor_frames_composed_total": "Output frames composed, all compositions.",
            "stage_compositor_active_speaker_switches_total": "Switches of the featured active speaker (featured: ACTIVE_SPEAKER), all compositions.",
            "stage_compositor_frames_dropped_total": "Output frames due before the previous was done, repeated instead of composed.",
            "stage_compositor_frame_encode_seconds": "Compose and encode time per output frame, in seconds (pacer waits excluded).",
            "stage_compositor_output_bytes_total": "Bytes written, by destination type (s3, channel); its rate is the output bitrate.",
            "stage_compositor_spool_objects": "Recording objects spooled on local disk, not yet in their S3 bucket.",
            "stage_compositor_spool_bytes": "Bytes of the recording objects spooled on local disk, not yet in their S3 bucket.",
            "stage_compositor_live_publishers": "Publishers on live stages now (RTMP, RTMPS and WHIP).",
            "stage_compositor_whip_loop_lag_seconds": "Worst lateness of the WHIP socket's 10 ms tick over the last second, in seconds.",
            "stage_compositor_ingest_admitted_total": "Publishes admitted to live stages.",
            "stage_compositor_ingest_refused_total": "Publishes refused, by the IVS error code.",
            "stage_compositor_ingest_publish_errors_total": "Publishes broken off after admission, by the IVS error code.",
            "stage_compositor_ingest_refusal_events_suppressed_total":
                "Refused publishes that made no Participant Publish Error event (refused too often lately).",
            "stage_compositor_composition_lagged_frames": "Frames a running composition repeated because it was behind the clock.",
            "stage_compositor_composition_dropped_packets": "Packets a running composition's queues dropped, by participant.",
            "stage_compositor_composition_late_video_frames": "Video frames that arrived too late for a running composition, by participant.",
            "stage_compositor_composition_audio_gap_seconds": "Seconds of a participant's sound missing from a running composition.",
            "stage_compositor_composition_jitter_allowance_seconds": "The jitter allowance a running composition waits for a participant, in seconds.",
            "stage_compositor_composition_allowance_steps": "Times a participant's jitter allowance stepped up in a running composition.",
            "stage_compositor_composition_allowance_stepped_seconds": "Seconds a participant's jitter allowance stepped up by in a running composition.",
        ]
        for (name, text) in whipGaugeHelp { help["stage_compositor_whip_\(name)"] = "WHIP participant: \(text)" }
        return help
    }()

    /// The per-WHIP-participant gauges (stage_compositor_whip_<name>{participant_id}).
    static let whipGaugeHelp = [
        "packets_received": "RTP packets received.",
        "packets_lost": "RTP packets lost (never received nor recovered).",
        "packets_recovered_by_nack": "RTP packets recovered by a retransmission asked for with a NACK.",
        "nacks_sent": "NACKs sent.",
        "plis_sent": "Picture loss indications sent.",
        "nack_round_trip_seconds": "Round trip from a NACK to the retransmission answering it, in seconds (0 until measured).",
        "audio_packets_too_late": "Audio packets that came after the reorder wait and were dropped.",
        "video_packets_too_late": "Video packets that came after the reorder wait and were dropped.",
        "audio_reorder_wait_seconds": "How long audio waits for a packet out of order now, in seconds.",
        "unneeded_retransmissions": "Retransmissions of video packets not awaited any more.",
        "jitter_seconds": "Video interarrival jitter, in seconds.",
        "bitrate_bps": "Received bitrate, in bits per second.",
        "srtp_auth_failures": "SRTP packets that failed authentication.",
        "undeclared_stream_packets": "Packets of SSRCs the offer did not declare, dropped.",
        "video_width": "Width of the video delivered to the decoders, in pixels.",
        "video_height": "Height of the video delivered to the decoders, in pixels.",
        "simulcast_layers": "Simulcast layers seen.",
        "simulcast_switches": "Switches between simulcast layers.",
        "frames_of_other_layers": "Complete frames of the simulcast layers not delivered.",
        "audio_capture_times": "abs-capture-time elements that mapped the audio onto the sender's clock.",
        "video_capture_times": "abs-capture-time elements that mapped the video onto the sender's clock.",
        "srtp_streams_refused": "Packets of SSRCs beyond the SRTP stream cap, dropped before decryption.",
        "dtls_datagrams_dropped": "DTLS datagrams beyond the session's budget, dropped unprocessed.",
        "latency_seconds": "The jitter allowance waited for this publisher, in seconds.",
        "latency_steps": "Times the jitter allowance stepped up.",
        "latency_stepped_seconds": "Seconds the jitter allowance stepped up by.",
    ]
}
