// Placeholder: replaced as the HeraldStore target grows.
