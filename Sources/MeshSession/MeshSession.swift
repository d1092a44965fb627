// MeshSession
