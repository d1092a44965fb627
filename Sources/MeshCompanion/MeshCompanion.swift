// MeshCompanion
