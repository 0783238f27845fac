// Placeholder: replaced as the APNs target grows.
