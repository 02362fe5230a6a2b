import asyncio
from aiortc import RTCPeerConnection
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack

async def main():
    pc = RTCPeerConnection()
    pc.addTransceiver(AudioStreamTrack(), direction="sendonly")
    pc.addTransceiver(VideoStreamTrack(), direction="sendonly")
    offer = await pc.createOffer()
    await pc.setLocalDescription(offer)
    print(pc.localDescription.sdp, end="")
    await pc.close()

asyncio.run(main())
