// MQTT 3.1.1 client (sans-I/O).
