// MeshStore
