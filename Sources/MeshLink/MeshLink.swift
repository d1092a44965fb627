// MeshLink
