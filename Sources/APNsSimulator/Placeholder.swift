// Placeholder: replaced as the APNsSimulator target grows.
