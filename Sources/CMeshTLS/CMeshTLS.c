#include "CMeshTLS.h"
