// MeshSim
