"""Operations on a running cluster: deploy, Kafka admin calls, health, verify, diagnose, and launching the Spark job."""
