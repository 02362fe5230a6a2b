print("stage-compositor")
