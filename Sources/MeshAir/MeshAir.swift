// MeshAir
