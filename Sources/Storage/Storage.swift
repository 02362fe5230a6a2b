// Storage module: object storage behind one protocol.
