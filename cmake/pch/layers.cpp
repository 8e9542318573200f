// The translation unit that owns the layers' precompiled header (cmake/KforgeLayers.cmake).
