// Placeholder: replaced as the GRPCServer target grows.
