// MeshDaemon
