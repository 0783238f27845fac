// Placeholder: replaced as the HeraldCore target grows.
