// Placeholder: replaced as the TLSTransport target grows.
