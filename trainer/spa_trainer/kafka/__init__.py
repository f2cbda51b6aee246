"""The trainer's one Kafka client (confluent-kafka) and its connection settings from `KAFKA_*`."""
