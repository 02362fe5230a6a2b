// The PostgreSQL schema, as numbered migrations. A migration, once released, never changes:
// a later one alters what it made. Versions sort as text, so they carry zero-padded numbers.
enum PostgresMigrations {
    struct Migration {
        var version: String
        var statements: [String]
    }

    /// pg_advisory_xact_lock key held while migrating ("stgcomp" in ASCII).
    static let lockKey: Int64 = 0x73_74_67_63_6f_6d_70

    static let all: [Migration] = [
        Migration(version: "0001-control-plane", statements: [
            "CREATE TABLE encoder_configuration (arn text PRIMARY KEY, document text NOT NULL)",
            "CREATE TABLE storage_configuration (arn text PRIMARY KEY, document text NOT NULL)",
            "CREATE TABLE stage (arn text PRIMARY KEY, document text NOT NULL)",
            """
            CREATE TABLE composition (arn text PRIMARY KEY, stage_arn text NOT NULL, state text NOT NULL,
              idempotency_token text, document text NOT NULL)
            """,
            "CREATE INDEX composition_by_stage ON composition (stage_arn)",
            "CREATE INDEX composition_by_idempotency_token ON composition (idempotency_token)",
            "CREATE TABLE ingest_configuration (arn text PRIMARY KEY, stream_key text NOT NULL, document text NOT NULL)",
            "CREATE INDEX ingest_configuration_by_stream_key ON ingest_configuration (stream_key)",
            """
            CREATE TABLE stage_session (stage_arn text NOT NULL, session_id text NOT NULL, start_time bigint NOT NULL,
              end_time bigint, document text NOT NULL, PRIMARY KEY (stage_arn, session_id))
            """,
            "CREATE INDEX stage_session_open ON stage_session (stage_arn, session_id) WHERE end_time IS NULL",
            """
            CREATE TABLE participant (stage_arn text NOT NULL, session_id text NOT NULL, participant_id text NOT NULL,
              join_order bigserial NOT NULL, document text NOT NULL, PRIMARY KEY (stage_arn, session_id, participant_id))
            """,
            """
            CREATE TABLE participant_event (sequence bigserial PRIMARY KEY, stage_arn text NOT NULL, session_id text NOT NULL,
              participant_id text NOT NULL, document text NOT NULL)
            """,
            "CREATE INDEX participant_event_by_participant ON participant_event (stage_arn, session_id, participant_id)",
            "CREATE TABLE public_key (arn text PRIMARY KEY, document text NOT NULL)",
        ]),
        // Daemons sharing the database: each node's lease (on the database's clock) and the
        // stages placed on it, with the capacity each placement reserves.
        Migration(version: "0002-fleet", statements: [
            "CREATE SEQUENCE node_incarnation",
            """
            CREATE TABLE node (node_id text PRIMARY KEY, incarnation bigint NOT NULL, internal_url text NOT NULL,
              api_url text NOT NULL, rtmp_url text, whip_url text, capacity_millicores integer NOT NULL CHECK (capacity_millicores >= 0),
              draining boolean NOT NULL DEFAULT false, registered_at timestamptz NOT NULL DEFAULT now(),
              lease_expires_at timestamptz NOT NULL)
            """,
            """
            CREATE TABLE stage_placement (stage_arn text PRIMARY KEY, node_id text NOT NULL, incarnation bigint NOT NULL,
              cost_millicores integer NOT NULL CHECK (cost_millicores >= 0), placed_at timestamptz NOT NULL DEFAULT now())
            """,
            "CREATE INDEX stage_placement_by_node ON stage_placement (node_id, incarnation)",
        ]),
        // Every node's participant-token public key: a token one node issued verifies on all.
        Migration(version: "0003-fleet-token-keys", statements: [
            "CREATE TABLE fleet_token_key (arn text PRIMARY KEY, public_key_pem text NOT NULL)",
        ]),
        // The event outbox, delivered in order by the one node holding its lease.
        Migration(version: "0004-event-outbox", statements: [
            """
            CREATE TABLE event_outbox (sequence bigserial PRIMARY KEY, document text NOT NULL, node_id text NOT NULL,
              created_at timestamptz NOT NULL DEFAULT now(), delivered_at timestamptz)
            """,
            "CREATE INDEX event_outbox_pending ON event_outbox (sequence) WHERE delivered_at IS NULL",
            """
            CREATE TABLE outbox_lease (id integer PRIMARY KEY CHECK (id = 1), node_id text NOT NULL, incarnation bigint NOT NULL,
              expires_at timestamptz NOT NULL)
            """,
        ]),
        // What each node measures its process using; placement counts the larger of it and
        // what the node's stages reserved.
        Migration(version: "0005-node-measured-load", statements: [
            "ALTER TABLE node ADD COLUMN measured_millicores integer NOT NULL DEFAULT 0",
        ]),
        // List operations page by ARN in byte order (keyset: `arn COLLATE "C" > last`); the
        // primary keys sort in the database's collation, which need not be bytes.
        Migration(version: "0006-keyset-pages", statements: [
            #"CREATE INDEX encoder_configuration_by_arn_bytes ON encoder_configuration (arn COLLATE "C")"#,
            #"CREATE INDEX storage_configuration_by_arn_bytes ON storage_configuration (arn COLLATE "C")"#,
            #"CREATE INDEX stage_by_arn_bytes ON stage (arn COLLATE "C")"#,
            #"CREATE INDEX composition_by_arn_bytes ON composition (arn COLLATE "C")"#,
            #"CREATE INDEX ingest_configuration_by_arn_bytes ON ingest_configuration (arn COLLATE "C")"#,
            #"CREATE INDEX public_key_by_arn_bytes ON public_key (arn COLLATE "C")"#,
        ]),
        // DisconnectParticipant's revocations of WHIP tokens, for every node and past restarts.
        Migration(version: "0007-participant-revocations", statements: [
            "CREATE TABLE participant_revocation (key text PRIMARY KEY, expires_at bigint NOT NULL)",
            // Fleet calls' nonces, each taken once while its signature's time is accepted.
            "CREATE TABLE fleet_nonce (nonce text PRIMARY KEY, expires_at bigint NOT NULL)",
        ]),
        // ListStageSessions pages newest first, then by session ID in byte order;
        // ListParticipants in join order; ListParticipantEvents by sequence (this index
        // replaces participant_event_by_participant, its prefix).
        Migration(version: "0008-session-pages", statements: [
            #"CREATE INDEX stage_session_newest_first ON stage_session (stage_arn, start_time DESC, session_id COLLATE "C")"#,
            "CREATE INDEX participant_by_join_order ON participant (stage_arn, session_id, join_order)",
            "CREATE INDEX participant_event_by_sequence ON participant_event (stage_arn, session_id, participant_id, sequence)",
            "DROP INDEX participant_event_by_participant",
        ]),
    ]
}
