// FFmpeg wrapper: the only module that imports CFFmpeg.
