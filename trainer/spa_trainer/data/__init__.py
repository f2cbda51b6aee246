"""Records and their decoding: consumed records and logs, Avro frames, SftRows, Rollouts, reject reasons."""
